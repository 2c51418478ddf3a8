#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <algorithm>

namespace cronoq::test {

Leader::Leader(StoreSite& site, const StoreOptions& options, std::chrono::nanoseconds retention)
    : store(site.open(options)) {
    store->journal().lead(reports.handlers(retention));
    EXPECT_TRUE(reports.wait_leading());
}

store::Sequence Leader::commit(store::Batch batch) {
    const store::Sequence sequence = store->journal().enqueue(std::move(batch));
    EXPECT_TRUE(reports.wait_committed(sequence));
    return sequence;
}

store::Recovered recover(StoreSite& site, std::chrono::nanoseconds retention) {
    Leader next(site, {}, retention);
    return next.reports.recovered.value_or(store::Recovered{});
}

const store::TaskRow* find_row(const store::Recovered& recovered, std::uint64_t id) {
    for (const auto& row : recovered.tasks)
        if (row.id.value == id) return &row;
    return nullptr;
}

std::vector<StoredTask> all_tasks(const Store& store) {
    std::vector<StoredTask> out;
    for (int s = static_cast<int>(TaskStatus::Blocked); s <= static_cast<int>(TaskStatus::Shed); ++s)
        for (auto& task : store.list(static_cast<TaskStatus>(s), std::size_t{1} << 30))
            out.push_back(std::move(task));
    std::sort(out.begin(), out.end(), [](const StoredTask& a, const StoredTask& b) { return a.id.value < b.id.value; });
    return out;
}

}  // namespace cronoq::test
