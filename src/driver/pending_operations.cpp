// Placeholders for Scheduler::query, pause and resume until they land:
// query reads the store directly (nothing without one), pause and resume
// know no pool.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/store/store.hpp>

#include "scheduler_state.hpp"

namespace cronoq::detail {

TaskPage SchedulerCore::query(const TaskQuery& query) const {
    if (!s_->options.store) return {};
    return s_->options.store->query(query);
}

bool SchedulerCore::pause(std::string_view) { return false; }
bool SchedulerCore::resume(std::string_view) { return false; }

}  // namespace cronoq::detail
