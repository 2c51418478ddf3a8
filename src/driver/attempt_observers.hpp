#pragma once
// The application's AttemptObserver (docs/guide/operations.md, "Tracing"):
// the attempts it was told of that have not ended, and the calls owed to
// it. Attempts start at a Dispatch; one ends at the engine's next status of
// its task (an end, a retry, a nack's Ready), or, handed over to the next
// leader, at its abort. The calls go with the step's other deferred work,
// after the engine's mutex and in the engine's order, so an end never
// precedes its start; what the observer throws is logged. Without an
// observer nothing is kept.
#include <cronoq/attempt_observer.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/ids.hpp>

#include "attempt_state.hpp"
#include "delivery.hpp"
#include "engine_mutex.hpp"

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

namespace cronoq::detail {

class AttemptObservers {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit AttemptObservers(AttemptObserver observer) : observer_(std::move(observer)) {}

    bool active() const { return observer_.on_start || observer_.on_end; }

    /// Attempt `attempt` of `record`'s task starts (its Dispatch).
    void started(const EngineHeld&, const TaskRecord& record, LeaseId lease, std::uint32_t attempt, core::Time now,
                 WallTime wall, std::vector<Deferred>& deferred);
    /// The engine reported `status` for `task`: the end of its attempt in
    /// flight, if it has one and `status` is not that attempt's Running.
    void status(const EngineHeld&, TaskId task, TaskStatus status, const std::string& message, core::Time now,
                std::vector<Deferred>& deferred);

    /// `task`'s attempt was aborted with no status to follow: a
    /// store-backed shutdown or a lost lead left it to the next leader.
    void handed_over(const EngineHeld& held, TaskId task, core::Time now, std::vector<Deferred>& deferred) {
        end(held, task, TaskStatus::Running, "handed over to the next leader", now, deferred);
    }

private:
    void end(const EngineHeld&, TaskId task, TaskStatus outcome, const std::string& message, core::Time now,
             std::vector<Deferred>& deferred);

    struct InFlight {
        cronoq::AttemptStart start;
        core::Time started;
    };
    AttemptObserver observer_;
    std::unordered_map<std::uint64_t, InFlight> in_flight_;  // by task id; guarded by the engine's mutex
};

}  // namespace cronoq::detail
