#include "pipeline_store.hpp"

#include "stored_values.hpp"

namespace cronoq::store {

std::optional<TaskRow> PipelineStore::read_task(const TaskRef& task) const {
    std::lock_guard lock(inspection_mutex_);
    return find_row(task);
}

LeaseView PipelineStore::read_lease() const {
    std::lock_guard lock(inspection_mutex_);
    return lease_row();
}

std::vector<InboxEntry> PipelineStore::read_inbox(std::size_t limit) const {
    std::lock_guard lock(inspection_mutex_);
    return inbox_rows(limit);
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
