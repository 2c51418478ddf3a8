#pragma once
// SqliteStore's state: the inspection connection, and the commit pipeline
// and leadership (store::Journal) run by the store's own thread.
#include "connection.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cronoq {

struct SqliteStore::Impl final : store::Journal {
    Impl(std::filesystem::path file, SqliteStoreConfig config);
    ~Impl() override;

    void lead(store::LeadHandlers handlers) override;
    store::Sequence enqueue(store::Batch batch) override;
    void release() override;
    store::Figures figures() const override;
    std::optional<store::TaskRow> read_task(const TaskRef& task) const override;
    std::size_t max_value_bytes() const override { return max_value_bytes_; }
    /// SQLite's limit on a string or blob, less room for the rest of a row.
    std::size_t max_value_bytes_ = 0;

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
    struct Queued {
        store::Sequence sequence;
        store::Batch batch;
    };

    // The store's thread.
    void run();
    std::optional<std::uint64_t> wait_to_lead();
    void lead_loop(std::uint64_t epoch);
    /// Takes queued batches, in order, for one transaction.
    std::vector<Queued> take_group(std::unique_lock<std::mutex>& lock);
    void put_back(std::vector<Queued> group);
    void lose(store::LostReason reason, std::string message);
    void record_commit(std::chrono::nanoseconds latency, std::size_t changes);
    /// Sleeps up to `duration`; returns early when released.
    void pause(std::chrono::nanoseconds duration);

    std::chrono::nanoseconds poll_interval() const;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> queue_;
    store::Sequence next_sequence_ = 1;
    store::Sequence committed_ = 0;
    bool lead_called_ = false;
    bool release_requested_ = false;
    bool finished_ = false;
    store::LeadHandlers handlers_;
    std::thread thread_;

    // Figures, under mutex_.
    std::uint64_t commits_ = 0;
    std::uint64_t failed_commits_ = 0;
    std::uint64_t changes_committed_ = 0;
    std::uint64_t pending_changes_ = 0;
    bool leading_ = false;
    std::uint64_t epoch_ = 0;
    std::vector<std::int64_t> latencies_;  ///< the last `latency_window` commits, a ring
    std::size_t latency_next_ = 0;
};

}  // namespace cronoq
