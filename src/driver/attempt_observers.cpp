// Calls to the application's AttemptObserver (attempt_observers.hpp).
#include "attempt_observers.hpp"

#include <cronoq/logging.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <memory>

namespace cronoq::detail {

namespace {

template <class F>
void contained(const char* which, TaskId task, F&& call) noexcept {
    try {
        call();
    } catch (const std::exception& e) {
        logger()->warn("task {}: the attempt observer's {} threw: {}", task.value, which, e.what());
    } catch (...) {
        logger()->warn("task {}: the attempt observer's {} threw a non-standard exception", task.value, which);
    }
}

}  // namespace

void AttemptObservers::started(const EngineHeld&, const TaskRecord& record, LeaseId lease, std::uint32_t attempt,
                               core::Time now, WallTime wall, std::vector<Deferred>& deferred) {
    if (!active()) return;
    InFlight& f = in_flight_[record.id().value];
    f.started = now;
    cronoq::AttemptStart& s = f.start;
    s.task = record.id();
    s.attempt = attempt;
    s.lease = lease;
    s.pool = *record.pool;
    s.kind = record.kind;
    s.key = record.key();
    s.traceparent = record.traceparent();
    s.at = wall;
    if (!observer_.on_start) return;
    deferred.emplace_back(UniqueFunction<void()>([on_start = &observer_.on_start, start = s] {
        contained("on_start", start.task, [&] { (*on_start)(start); });
    }));
}

void AttemptObservers::status(const EngineHeld& held, TaskId task, TaskStatus status, const std::string& message,
                              core::Time now, std::vector<Deferred>& deferred) {
    if (status == TaskStatus::Running) return;
    end(held, task, status, message, now, deferred);
}

void AttemptObservers::end(const EngineHeld&, TaskId task, TaskStatus status, const std::string& message,
                           core::Time now, std::vector<Deferred>& deferred) {
    if (in_flight_.empty()) return;
    const auto found = in_flight_.find(task.value);
    if (found == in_flight_.end()) return;
    auto end = std::make_unique<cronoq::AttemptEnd>();
    end->start = std::move(found->second.start);
    end->outcome = status;
    end->message = message;
    end->duration = std::max(now - found->second.started, core::Duration(0));
    in_flight_.erase(found);
    if (!observer_.on_end) return;
    deferred.emplace_back(UniqueFunction<void()>([on_end = &observer_.on_end, end = std::move(end)] {
        contained("on_end", end->start.task, [&] { (*on_end)(*end); });
    }));
}

}  // namespace cronoq::detail
