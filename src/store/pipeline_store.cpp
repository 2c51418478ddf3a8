#include "pipeline_store.hpp"

#include "stored_values.hpp"

namespace cronoq::store {

std::optional<TaskRow> PipelineStore::read_task(const TaskRef& task) const {
    std::lock_guard lock(inspection_mutex_);
    return find_row(task);
}

void PipelineStore::lead(LeadHandlers handlers) {
    {
        // A second call throws below: it must not change the first's shard.
        std::lock_guard lock(shard_mutex_);
        if (!shard_set_) {
            shard_ = handlers.shard;
            pools_ = handlers.pools;
            shard_set_ = true;
        }
    }
    pipeline_.lead(std::move(handlers));
}

std::string PipelineStore::shard() const {
    std::lock_guard lock(shard_mutex_);
    return shard_;
}

std::vector<std::string> PipelineStore::shard_pools() const {
    std::lock_guard lock(shard_mutex_);
    return pools_;
}

LeaseView PipelineStore::read_lease() const {
    const std::string name = shard();
    std::lock_guard lock(inspection_mutex_);
    return lease_row(name);
}

ShardMap PipelineStore::read_shards() const {
    std::lock_guard lock(inspection_mutex_);
    return shard_rows();
}

std::vector<InboxEntry> PipelineStore::read_inbox(std::size_t limit) const {
    const std::string name = shard();
    std::lock_guard lock(inspection_mutex_);
    return inbox_rows(name, limit);
}

std::optional<StoredTask> PipelineStore::get_task(const TaskRef& task) const {
    auto row = read_task(task);
    if (!row) return std::nullopt;
    return to_stored_task(std::move(*row));
}

std::vector<StoredTask> PipelineStore::list(TaskStatus status, std::size_t limit) const {
    std::lock_guard lock(inspection_mutex_);
    std::vector<StoredTask> out;
    for (auto& row : list_rows(status, limit)) out.push_back(to_stored_task(std::move(row)));
    return out;
}

TaskPage PipelineStore::query(const TaskQuery& query) const {
    const TaskQueryPlan plan(query);
    RowPage rows;
    {
        std::lock_guard lock(inspection_mutex_);
        rows = plan.page(query_rows(plan));
    }
    TaskPage out;
    out.tasks.reserve(rows.rows.size());
    for (auto& row : rows.rows) out.tasks.push_back(to_stored_task(std::move(row)));
    out.next_cursor = std::move(rows.next_cursor);
    return out;
}

std::size_t PipelineStore::prune(std::chrono::nanoseconds older_than) {
    std::lock_guard lock(inspection_mutex_);
    const auto cutoff = age_cutoff(std::chrono::system_clock::now(), older_than);
    // Chunks of their own transactions: a leader's commits wait at most one.
    constexpr std::size_t chunk = 1000;
    std::size_t total = 0;
    for (;;) {
        const std::size_t removed = prune_rows(cutoff, chunk);
        total += removed;
        if (removed < chunk) return total;
    }
}

}  // namespace cronoq::store
