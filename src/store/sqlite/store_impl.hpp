#pragma once
// SqliteStore's state: the inspection connection, and the database half of
// the store's thread (store::CommitBackend) under the backend-neutral
// commit pipeline that implements store::Journal.
#include "../commit_pipeline.hpp"
#include "connection.hpp"
#include "rows.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace cronoq {

struct SqliteStore::Impl final : store::Journal, store::CommitBackend {
    Impl(std::filesystem::path file, SqliteStoreConfig config);
    /// Releases and joins the store's thread while the connections live.
    ~Impl() override;

    // store::Journal: the pipeline, and the reads of this backend.
    void lead(store::LeadHandlers handlers) override { pipeline_.lead(std::move(handlers)); }
    store::Sequence enqueue(store::Batch batch) override { return pipeline_.enqueue(std::move(batch)); }
    void release() override { pipeline_.release(); }
    store::Figures figures() const override { return pipeline_.figures(); }
    std::optional<store::TaskRow> read_task(const TaskRef& task) const override;
    std::size_t max_value_bytes() const override { return max_value_bytes_; }
    /// SQLite's limit on a string or blob, less room for the rest of a row.
    std::size_t max_value_bytes_ = 0;

    // store::CommitBackend, on the store's thread (journal.cpp).
    std::string name() const override { return path.string(); }
    std::optional<std::uint64_t> try_take_over(std::chrono::nanoseconds& next_look) override;
    store::Recovered recover(std::uint64_t epoch, store::WallTime terminal_since) override;
    std::size_t commit(const store::Transaction& transaction) override;

    const std::filesystem::path path;
    const SqliteStoreConfig config;
    /// Names this store in the leader row: process, host and a per-process
    /// number, so two stores of one process on one file differ.
    const std::string holder;

    /// Inspection reads and prunes: a connection apart from the writer's,
    /// so they run in short transactions of their own while it commits.
    mutable std::mutex inspection_mutex;
    std::unique_ptr<store::sqlite::Connection> inspection;
    /// Used by the store's thread only, once it runs.
    std::unique_ptr<store::sqlite::Connection> writer;

private:
    std::optional<store::sqlite::ChangeWriter> changer_;  ///< prepared once, at the first commit
    /// Last: it is stopped first, while everything it uses still lives.
    store::CommitPipeline pipeline_;
};

}  // namespace cronoq
