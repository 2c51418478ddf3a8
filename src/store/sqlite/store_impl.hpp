#pragma once
// SqliteStore's state: the inspection connection and its queries, and the
// database half of the store's thread (store::CommitBackend) under the
// backend-neutral store::PipelineStore.
#include "../pipeline_store.hpp"
#include "client_access.hpp"
#include "connection.hpp"
#include "rows.hpp"

#include <cronoq/store/sqlite_store.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace cronoq {

struct SqliteStore::Impl final : store::PipelineStore {
    Impl(std::filesystem::path file, SqliteStoreConfig config);
    /// Releases and joins the store's thread while the connections live.
    ~Impl() override;

    std::size_t max_value_bytes() const override { return max_value_bytes_; }
    /// SQLite's limit on a string or blob, less room for the rest of a row.
    std::size_t max_value_bytes_ = 0;

    // store::CommitBackend, on the store's thread (journal.cpp).
    std::string name() const override { return path.string(); }
    std::optional<std::uint64_t> try_take_over(std::chrono::nanoseconds& next_look) override;
    store::Recovered recover(std::uint64_t epoch, store::WallTime terminal_since) override;
    std::size_t commit(const store::Transaction& transaction) override;
    std::chrono::nanoseconds inbox_poll() const override { return std::chrono::milliseconds(1); }
    bool inbox_signalled() override;

    const std::filesystem::path path;
    const SqliteStoreConfig config;
    /// Names this store in the leader row: process, host and a per-process
    /// number, so two stores of one process on one file differ.
    const std::string holder;

    /// Inspection reads and prunes: a connection apart from the writer's,
    /// so they run in short transactions of their own while it commits.
    std::unique_ptr<store::sqlite::Connection> inspection;
    /// Used by the store's thread only, once it runs.
    std::unique_ptr<store::sqlite::Connection> writer;
    std::unique_ptr<store::sqlite::SqliteClientAccess> clients;

private:
    // store::PipelineStore's inspection queries (sqlite_store.cpp).
    std::optional<store::TaskRow> find_row(const TaskRef& task) const override;
    store::LeaseView lease_row(const std::string& shard) const override;
    store::ShardMap shard_rows() const override;
    std::vector<store::InboxEntry> inbox_rows(const std::string& shard, std::size_t limit) const override;
    std::vector<store::TaskRow> list_rows(TaskStatus status, std::size_t limit) const override;
    std::vector<store::TaskRow> query_rows(const store::TaskQueryPlan& plan) const override;
    std::size_t prune_rows(store::WallTime cutoff, std::size_t limit) override;

    std::optional<store::sqlite::ChangeWriter> changer_;  ///< prepared once, at the first commit
    /// The writer's `PRAGMA data_version` at the last look at the inbox:
    /// another connection's commit changes it, the writer's own do not.
    std::int64_t seen_version_ = 0;
    std::optional<store::sqlite::Statement> data_version_;  ///< prepared once, at the first look
};

}  // namespace cronoq
