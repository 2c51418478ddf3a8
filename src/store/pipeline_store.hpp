#pragma once
// What every store backend shares above its database: store::Journal over
// the commit pipeline, and the inspection members of `cronoq::Store`
// (get_task, list, query, prune), one at a time on the backend's inspection
// connection. A backend supplies the database half of the store's thread
// (CommitBackend) and the inspection queries.
#include "commit_pipeline.hpp"
#include "task_query_plan.hpp"

#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::store {

class PipelineStore : public Journal, public CommitBackend {
public:
    // store::Journal, but `max_value_bytes`, which is the backend's.
    void lead(LeadHandlers handlers) final;
    Sequence enqueue(Batch batch) final { return pipeline_.enqueue(std::move(batch)); }
    void release() final { pipeline_.release(); }
    Figures figures() const final { return pipeline_.figures(); }
    std::optional<TaskRow> read_task(const TaskRef& task) const final;
    LeaseView read_lease() const final;
    ShardMap read_shards() const final;
    std::vector<InboxEntry> read_inbox(std::size_t limit) const final;

    // cronoq::Store's inspection members.
    std::optional<StoredTask> get_task(const TaskRef& task) const;
    std::vector<StoredTask> list(TaskStatus status, std::size_t limit) const;
    TaskPage query(const TaskQuery& query) const;
    std::size_t prune(std::chrono::nanoseconds older_than);

protected:
    /// The shard `lead` was given ("default" before) and the pools it
    /// declares; set before the store's thread starts.
    std::string shard() const;
    std::vector<std::string> shard_pools() const;

    explicit PipelineStore(PipelineConfig config) : pipeline_(*this, config) {}
    ~PipelineStore() override = default;

    /// Releases and joins the store's thread. A backend's destructor calls
    /// it first, while the connections that thread uses still live.
    void stop() { pipeline_.stop(); }

    // The inspection queries, each in a short transaction of its own on the
    // inspection connection, never under the store's thread; called one at
    // a time.
    virtual std::optional<TaskRow> find_row(const TaskRef& task) const = 0;
    virtual LeaseView lease_row(const std::string& shard) const = 0;
    virtual ShardMap shard_rows() const = 0;
    virtual std::vector<InboxEntry> inbox_rows(const std::string& shard, std::size_t limit) const = 0;
    virtual std::vector<TaskRow> list_rows(TaskStatus status, std::size_t limit) const = 0;
    /// The plan's walks in one read transaction, their rows together.
    virtual std::vector<TaskRow> query_rows(const TaskQueryPlan& plan) const = 0;
    /// Deletes up to `limit` terminal rows updated before `cutoff`.
    virtual std::size_t prune_rows(WallTime cutoff, std::size_t limit) = 0;

private:
    mutable std::mutex inspection_mutex_;
    mutable std::mutex shard_mutex_;
    std::string shard_ = "default";
    std::vector<std::string> pools_;
    bool shard_set_ = false;
    CommitPipeline pipeline_;
};

}  // namespace cronoq::store
