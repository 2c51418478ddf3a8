#pragma once
// What the engine asks its driver to do. Drained after every engine call.
// Checked by tests/CMakeLists.txt ("no_engine"): the driver's public headers must not reach it.
#define CRONOQ_CORE_ACTION_HPP_INCLUDED 1
#include <cronoq/core/task_spec.hpp>
#include <cronoq/core/time.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cronoq::core {

/// Start attempt `attempt` of `task` under the fresh lease `lease`.
struct Dispatch {
    TaskId task;
    LeaseId lease;
    PoolId pool;
    std::uint32_t attempt;
    std::uint64_t user;  ///< TaskSpec::user
    /// The attempt's timeout, as the engine enforces it: the task's own,
    /// else its pool's default; empty for none.
    std::optional<Duration> timeout;
    /// The task's soft deadline (TaskSpec::deadline), if any.
    std::optional<Time> deadline;
    /// The remote worker that holds the lease (PoolConfig::remote); 0 for
    /// a local pool, whose driver runs the attempt itself.
    WorkerId worker{};
};

/// `WorkerLost`: the remote worker holding the lease disconnected
/// (`Engine::disconnect_worker`); the attempt fails as retryable.
enum class AbortReason : std::uint8_t { Cancelled, Timeout, LeaseExpired, Shutdown, WorkerLost };
std::string_view to_string(AbortReason r);

/// The engine has abandoned this attempt: its slot is already free, and any
/// later report for `lease` is ignored. The driver stops the attempt.
struct Abort {
    TaskId task;
    LeaseId lease;
    PoolId pool;
    AbortReason reason;
    std::uint64_t user;  ///< TaskSpec::user
};

/// A status transition of a task. Terminal ones carry the last error, if any.
struct Status {
    TaskId task;
    PoolId pool;
    TaskStatus status;
    std::uint32_t attempt;  ///< attempts started so far
    Time at;
    std::string message;
    /// `Retrying`: when its backoff ends; `Scheduled`: its fixed start;
    /// empty otherwise. What a store keeps to bring the task back (docs/guide/durability.md).
    std::optional<Time> until;
    std::uint64_t user;  ///< TaskSpec::user
};

/// The pool's capacity is now `capacity` (autoscaling).
struct ScaleTo {
    PoolId pool;
    std::size_t capacity;
};

/// The pool's user scaler is due (`PoolConfig::user_scaler`): call it with
/// `Engine::scaler_question(pool)`, outside whatever lock serializes the
/// engine (the scaler is application code), and give its answer to
/// `Engine::answer_scaler`. Until then the pool asks nothing more and its
/// capacity stays as it is.
struct AskScaler {
    PoolId pool;
};

/// A bounded pool has room again for a waiting submitter.
struct SpaceAvailable {
    PoolId pool;
};

/// The engine no longer knows this terminal task: its retention ended (by
/// age or count). `status()` is empty from now on and its key, if any, is
/// free again. The driver drops what it kept for the task.
struct Forget {
    TaskId task;
    std::uint64_t user;  ///< TaskSpec::user
};

using Action = std::variant<Dispatch, Abort, Status, ScaleTo, SpaceAvailable, Forget, AskScaler>;

}  // namespace cronoq::core
