// Engine::scan: live and retained tasks for an inspection, newest first, in
// bounded work (include/cronoq/core/engine.hpp; docs/guide/operations.md,
// "Queries").
#include "engine_state.hpp"

#include <algorithm>

namespace cronoq::core {


TaskScanPage Engine::scan(const TaskFilter& filter, std::uint64_t below, std::size_t limit) const {
    const State& s = *s_;
    // State is private to Engine: the helpers are lambdas here.
    const auto selected = [&s, &filter](const TaskSlot& t, std::uint32_t slot) {
        const TaskFilter& f = filter;
        if (f.statuses && !(f.statuses & (1u << static_cast<unsigned>(t.status)))) return false;
        if (f.pool && *f.pool != t.pool) return false;
        const Time admitted = s.tasks.admitted(slot);
        if (admitted < f.admitted_from || admitted >= f.admitted_until) return false;
        if (f.kind && s.kinds.name(t.kind) != *f.kind) return false;
        if (f.key_prefix) {
            const std::string* key = s.tasks.key_of(t);
            if (!key || !key->starts_with(*f.key_prefix)) return false;
        }
        if (f.fair_key && s.tasks.fair_keys.name(t.fair_key) != *f.fair_key) return false;
        return true;
    };
    const auto view_of = [&s](const TaskSlot& t, std::uint32_t slot) {
        TaskView v;
        v.id = t.id;
        v.pool = t.pool;
        v.kind = s.kinds.name(t.kind);
        v.status = t.status;
        v.attempt = t.attempt;
        v.priority = t.priority;
        if (const std::string* key = s.tasks.key_of(t)) v.key = *key;
        if (t.fair_key) v.fair_key = std::string(s.tasks.fair_keys.name(t.fair_key));
        v.user = t.user;
        v.admitted = s.tasks.admitted(slot);
        if (is_terminal(t.status) || t.status == TaskStatus::Ready) v.changed = t.ready_since;
        else if (t.status == TaskStatus::Running) v.changed = s.tasks.attempt(t).started;
        else v.changed = v.admitted;
        return v;
    };
    TaskScanPage page;
    if (limit == 0) return page;
    if (s.tasks.held() <= scan_all_below) {
        // Few tasks: read each once, keep the newest `limit + 1` matches
        // (the one past the page says whether there is a next).
        std::vector<std::pair<std::uint64_t, std::uint32_t>> found;
        for (std::uint32_t slot = 0; slot < s.tasks.size(); ++slot) {
            const TaskSlot& t = s.tasks[slot];
            if (t.id && t.id.value < below && selected(t, slot)) found.emplace_back(t.id.value, slot);
        }
        const std::size_t keep = std::min(found.size(), limit + 1);
        std::partial_sort(found.begin(), found.begin() + static_cast<std::ptrdiff_t>(keep), found.end(),
                          [](const auto& a, const auto& b) { return a.first > b.first; });
        for (std::size_t i = 0; i < std::min(keep, limit); ++i)
            page.tasks.push_back(view_of(s.tasks[found[i].second], found[i].second));
        if (found.size() > limit) page.next_below = page.tasks.back().id.value;
        return page;
    }
    // Many tasks: walk ids down (ids come from counters, so they are dense
    // where this engine admitted), one look-up each, within the budget.
    const std::uint64_t lowest = s.tasks.lowest_id();
    std::uint64_t id = std::min(below, next_task_id.load(std::memory_order_relaxed));
    std::size_t looked = 0;
    while (id > lowest && looked < id_budget) {
        --id;
        ++looked;
        const TaskSlot* t = s.tasks.find(TaskId{id});
        if (!t) continue;
        const auto slot = s.tasks.index_of(*t);
        if (!selected(*t, slot)) continue;
        if (page.tasks.size() == limit) {
            page.next_below = page.tasks.back().id.value;  // one more matches
            return page;
        }
        page.tasks.push_back(view_of(*t, slot));
    }
    if (id > lowest) page.next_below = id;  // out of budget: go on from here
    return page;
}

}  // namespace cronoq::core
