#pragma once
// The one admission entry (docs/design.md, "One submission path"): a group
// of submissions becomes the engine's specs and the driver's task records,
// and the engine's answers become handles. Admission owns the records: it
// makes them (from recycled blocks, runtime/block_pool.hpp) and keeps the
// list of those the engine holds, so that a scheduler destroyed while the
// engine still knows tasks lets go of them. Everything here runs in engine
// steps (an `EngineHeld`); the engine is the caller's.
#include <cronoq/clock.hpp>
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include "attempt_state.hpp"
#include "durable_link.hpp"
#include "encoder.hpp"
#include "engine_mutex.hpp"
#include "pool_runtime.hpp"
#include "runtime/block_pool.hpp"
#include "submission.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::detail {

class Admission {
public:
    /// `self` is the scheduler's weak reference to itself, set once it is
    /// made (each record keeps a copy); `durable` is null without a store.
    Admission(const Pools& pools, const Clock& clock, const Encoder& encoder, const std::weak_ptr<SchedulerCore>& self,
              DurableLink* durable)
        : pools_(pools), clock_(clock), encoder_(encoder), self_(self), durable_(durable) {}

    /// Admits `group` into `engine` at `now`, each result to `group.result`
    /// in order; leaves the engine's actions to the caller.
    void admit(const EngineHeld& held, core::Engine& engine, Submissions& group, AdmitMode mode, core::Time now);

    // ---- the records the engine holds --------------------------------------------------
    // Inline: every task is held and released once.
    /// The engine's reference to `record`, from admission until it lets go.
    void hold(const EngineHeld&, const std::shared_ptr<TaskRecord>& record) {
        record->engine_ref = record;
        record->prev = held_.prev;
        record->next = &held_;
        record->prev->next = record.get();
        held_.prev = record.get();
    }
    /// Hands the engine's reference back, to drop later.
    std::shared_ptr<TaskRecord> release(const EngineHeld&, TaskRecord& record) {
        record.prev->next = record.next;
        record.next->prev = record.prev;
        record.prev = record.next = &record;
        return std::move(record.engine_ref);
    }
    /// The records of tasks that have not ended (the lead was lost).
    std::vector<std::shared_ptr<TaskRecord>> unfinished(const EngineHeld&) const;
    /// Lets go of every record still held (the scheduler's destruction).
    std::vector<std::shared_ptr<TaskRecord>> release_all();

private:
    using Failure = std::pair<SubmitError, std::string>;
    using WallTime = std::chrono::system_clock::time_point;

    std::optional<Failure> to_spec(core::Engine& engine, const TaskRequest& r, core::Time now, WallTime wall,
                                   core::TaskSpec& spec) const;
    std::shared_ptr<TaskRecord> make_record(core::PoolId pool, TaskRequest&& r, WallTime wall, const Encoded* encoded);
    static void give_back(TaskRecord& record, TaskRequest& r);
    std::shared_ptr<HandleState> admitted(const EngineHeld& held, core::Engine& engine, TaskId id,
                                          std::shared_ptr<TaskRecord> record, const Encoded* encoded);
    // `ingesting`: AdmitMode::Ingesting (each submission's id is its row's).
    void admit_each(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now, bool ingesting);
    void admit_all(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now, bool ingesting);
    void admit_replacing(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now);
    void admit_restoring(const EngineHeld& held, core::Engine& engine, Submissions& group, core::Time now);

    const Pools& pools_;
    const Clock& clock_;
    const Encoder& encoder_;
    const std::weak_ptr<SchedulerCore>& self_;
    DurableLink* const durable_;
    RecordLink held_;  // every record whose engine_ref is set
    // Where records are made: freed blocks are kept for reuse, up to a bound.
    OwnedPool record_blocks_{shared_block_size<TaskRecord>};
};

}  // namespace cronoq::detail
