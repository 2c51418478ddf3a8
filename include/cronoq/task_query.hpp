#pragma once
// TaskQuery and TaskPage: tasks filtered, newest first, a page at a time
// (docs/store.md, "Queries"; `Store::query`).
#include <cronoq/stored_task.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace cronoq {

/// Which tasks, and where the page starts. Every filter that is set must
/// hold (AND); the statuses are alternatives (OR).
struct TaskQuery {
    std::vector<TaskStatus> statuses;  ///< empty: any
    std::optional<std::string> pool, kind;
    /// Tasks whose key starts with it; never a task without a key.
    std::optional<std::string> key_prefix;
    /// Tasks of this fair key; `""` selects the tasks without one.
    std::optional<std::string> fair_key;
    /// `submitted_after <= submitted_at < submitted_before`.
    std::optional<std::chrono::system_clock::time_point> submitted_after, submitted_before;
    /// Tasks per page, clamped to [1, 1000].
    std::size_t limit = 50;
    /// The previous page's `next_cursor`; empty for the first page.
    std::optional<std::string> cursor;
};

/// One page, newest task (highest id) first. `next_cursor` is set when more
/// tasks match beyond this page: pass it as `TaskQuery::cursor` for the next
/// one. The cursor is the last id seen, so paging returns every match at
/// most once, and tasks submitted after the first page never appear in
/// later ones.
struct TaskPage {
    std::vector<StoredTask> tasks;
    std::optional<std::string> next_cursor;
};

}  // namespace cronoq
