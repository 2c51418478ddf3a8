#pragma once
// Dependency edges between tasks and the policy for references to keys that
// do not exist yet (docs/guide/dependencies-and-keys.md).
#include <cronoq/task_ref.hpp>
#include <cronoq/task_status.hpp>

#include <chrono>
#include <cstdint>
#include <utility>
#include <variant>

namespace cronoq {

/// One edge: the dependent task waits until its parent `ref` ends in a way
/// that meets `kind`. An edge that can no longer be met (e.g. `on_success`
/// of a parent that failed or was cancelled) makes the dependent `Skipped`,
/// and the skip propagates down the graph at once.
struct Dep {
    enum class Kind : std::uint8_t {
        OnSuccess,   ///< parent `Succeeded`
        OnFailure,   ///< parent `Failed` or `DeadLettered`
        OnComplete,  ///< parent in any terminal status
    };

    static Dep on_success(TaskRef ref) { return Dep{Kind::OnSuccess, std::move(ref)}; }
    static Dep on_failure(TaskRef ref) { return Dep{Kind::OnFailure, std::move(ref)}; }
    static Dep on_complete(TaskRef ref) { return Dep{Kind::OnComplete, std::move(ref)}; }

    Kind kind;
    TaskRef ref;
};

/// Whether a parent that ended in `parent` meets an edge of `kind`.
constexpr bool dep_met(Dep::Kind kind, TaskStatus parent) {
    switch (kind) {
        case Dep::Kind::OnSuccess: return parent == TaskStatus::Succeeded;
        case Dep::Kind::OnFailure: return parent == TaskStatus::Failed || parent == TaskStatus::DeadLettered;
        case Dep::Kind::OnComplete: return is_terminal(parent);
    }
    return false;
}

/// What a pool does with a dependency on a key that no live or retained
/// task holds: `Reject` the submit (`SubmitError::UnknownDependency`, the
/// default) or `Await` the key for `timeout`: the dependent stays `Blocked`
/// until a task with that key is submitted, and ends `Skipped` if none is
/// within the timeout. A dependency on an unknown *id* is always rejected:
/// ids are never submitted later.
///
///     pool.unknown_dependency(cronoq::UnknownDependency::Await{30s});
struct UnknownDependency {
    struct Reject {};
    struct Await {
        std::chrono::nanoseconds timeout;
    };

    UnknownDependency() = default;
    UnknownDependency(Reject) {}
    UnknownDependency(Await a) : policy(a) {}

    bool awaits() const { return std::holds_alternative<Await>(policy); }
    /// Precondition: `awaits()`.
    std::chrono::nanoseconds timeout() const { return std::get<Await>(policy).timeout; }

    std::variant<Reject, Await> policy;
};

}  // namespace cronoq
