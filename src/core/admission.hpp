#pragma once
// Admission of tasks (docs/guide/ordering.md, docs/guide/time-and-cron.md,
// docs/guide/dependencies-and-keys.md): a batch is checked whole (fields,
// keys, dependency references, cycles, reservations, bounds) before
// anything is admitted, so a failing batch leaves no trace. A single
// submit with dependencies or a fixed start is a batch of one;
// Engine::submit admits the others directly (check_spec, make_room,
// admit_one), without the batch's bookkeeping. Holds the components a new
// task joins, given at construction; owns nothing between calls.
#include "backlog_bounds.hpp"
#include "engine_types.hpp"
#include "kind_table.hpp"
#include "lifecycle.hpp"
#include "resource_gate.hpp"
#include "task_table.hpp"
#include "waiting_room.hpp"
#include "worker_roster.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core {

/// Why a task or a batch is refused.
struct Rejection {
    SubmitError error;
    std::string message;
};

class Admission {
public:
    struct Parts {
        std::vector<PoolState>& pools;
        detail::KindTable& kinds;
        ResourceGate& resources;
        WorkerRoster& workers;
        WaitingRoom& waiting;
        BacklogBounds& bounds;
        Lifecycle& life;
        Outbox& out;
    };
    Admission(TaskTable& tasks, const Parts& parts)
        : tasks_(tasks), pools_(parts.pools), kinds_(parts.kinds), resources_(parts.resources),
          workers_(parts.workers), waiting_(parts.waiting), bounds_(parts.bounds), life_(parts.life), out_(parts.out) {}

    /// The fields of one spec. `with_resources`: also whether the
    /// registry can serve its resources.
    std::optional<SubmitError> check_spec(const TaskSpec& spec, std::string& why, bool with_resources = true) const;
    /// Room for one more task of `pool` at `priority`, shedding a victim if
    /// the pool's overflow policy says so (the one change a refused task
    /// may leave behind: the victim is gone either way).
    std::optional<SubmitError> make_room(PoolId pool, Priority priority, std::string& why, Time now) {
        const BacklogBounds::Room room = bounds_.make_room(pool, priority, why);
        if (room.victim != no_slot) life_.shed(room.victim, why, now);
        return room.error;
    }
    /// Takes `slot` for a new task: fields, id, key, start, needs, labels.
    /// It counts as Blocked (without an event) until the caller blocks it
    /// for real or moves it on. `id`: a restored task's own; empty takes
    /// the next id. `key_hash`: FairKeyNames::hash of its fair key, if
    /// the caller took it already (to prefetch the key's bucket).
    TaskId admit_one(const TaskSpec& spec, std::uint32_t slot, Time now, TaskId id = {},
                     std::optional<std::uint64_t> key_hash = std::nullopt);

    // ---- a batch (Engine::submit_batch) -------------------------------------------
    struct Target;
    struct Batch;
    /// All of `specs` or none, in phases: validate (before the caller runs
    /// due timers: it changes nothing), check (keys, dependencies, order,
    /// cycles, reservations, bounds), then place. Nothing can fail in place.
    std::optional<Rejection> validate(const Batch& batch) const;
    std::optional<Rejection> check(Batch& batch, Time now);
    std::vector<TaskId> place(Batch& batch, Time now);

private:
    std::optional<Rejection> resolve_keys(Batch& batch) const;
    std::optional<Rejection> resolve_dependencies(Batch& batch) const;
    std::optional<Rejection> order_within_batch(Batch& batch) const;
    std::optional<Rejection> check_cycles_through_awaited_keys(const Batch& batch) const;
    std::optional<Rejection> check_reservations(const Batch& batch) const;
    std::optional<Rejection> check_bounds(const Batch& batch, Time now);
    void place_one(Batch& batch, std::size_t i, Time now, std::optional<std::uint64_t> key_hash);
    /// FairKeyNames::hash of the fair key of the batch's `k`-th spec to
    /// place, its bucket prefetched; empty past the end or without a key.
    std::optional<std::uint64_t> prefetch_fair_key(const Batch& batch, std::size_t k) const;
    std::string broken_edge(const Batch& batch, std::size_t i, bool& pending) const;
    void block(const Batch& batch, std::size_t i, std::uint32_t slot, Time now);
    Duration expected_duration(const TaskSpec& spec) const {
        return pools_[spec.pool].expected_duration(spec.kind, spec.duration_hint.value_or(Duration{}));
    }

    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    detail::KindTable& kinds_;
    ResourceGate& resources_;
    WorkerRoster& workers_;
    WaitingRoom& waiting_;
    BacklogBounds& bounds_;
    Lifecycle& life_;
    Outbox& out_;
};

// Where one dependency edge of a batch task points.
struct Admission::Target {
    enum class Where : std::uint8_t { Task, InBatch, AwaitKey } where;
    Dep::Kind kind;
    TaskId task{};           // Where::Task
    std::size_t index = 0;   // Where::InBatch
    std::string_view key{};  // Where::AwaitKey
};

// A batch on its way in: what the phases learn about it, each from the
// ones before.
struct Admission::Batch {
    std::span<const TaskSpec> specs;
    /// Per spec: the task holding its key (it admits nothing), and once
    /// placed, the new task.
    std::vector<std::optional<TaskId>> ids;
    /// The batch's own keys, to the spec defining each.
    detail::StringMap<std::size_t> defined;
    /// Per spec: where each of its dependency edges points.
    std::vector<std::vector<Target>> targets;
    /// The specs to admit, each after every batch member it depends on.
    std::vector<std::size_t> order;

    explicit Batch(std::span<const TaskSpec> s) : specs(s), ids(s.size()), targets(s.size()) {}
    std::size_t size() const { return specs.size(); }
    bool admits(std::size_t i) const { return !ids[i]; }
    /// The prefix naming spec `i` in a message about a batch.
    std::string where(std::size_t i) const { return size() > 1 ? "task " + std::to_string(i) + ": " : std::string{}; }
};

}  // namespace cronoq::core
