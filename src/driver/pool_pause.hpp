#pragma once
// Pausing and resuming a pool (docs/guide/operations.md, "Pause and
// resume"), one way for each caller: `Scheduler::pause`/`resume`, and a
// client's pause or resume that the leader takes from the store's inbox at
// ingestion or at recovery (docs/store.md, "Paused pools").
#include "scheduler_state.hpp"

#include <string_view>

namespace cronoq::detail {

/// In a step: pauses (`paused`) or resumes the pool named `name`; a change
/// is written to the store (a resume of a running pool writes nothing).
/// False for a pool this scheduler does not declare. The caller applies
/// the actions.
bool set_pool_paused(SchedulerCore::State& s, std::string_view name, bool paused, core::Time now)
    CRONOQ_REQUIRES(s.mu);

}  // namespace cronoq::detail
