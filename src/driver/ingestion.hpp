#pragma once
// The leader's ingestion of what clients of its store committed
// (docs/store.md, "Clients"): submissions, cancels, pauses and resumes
// read from the store's inbox, in commit order, through the one admission entry
// (AdmitMode::Ingesting) with the row's id, and each entry taken
// (InboxTaken) in the same batch as what the leader made of it. Woken only
// by the store (`on_inbox`) or by room made for a submission that waits:
// a scheduler no client writes to does no work here. Data: intake.hpp.
#include <cronoq/store/journal.hpp>

#include "client_batch.hpp"
#include "scheduler_state.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::detail {

class Ingestion {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit Ingestion(SchedulerCore::State& s) : s_(s) {}

    /// The store's `on_inbox`, on its thread: posts a pass to the
    /// scheduler's executor unless one is posted or under way. Never blocks.
    void wake();
    /// In a step: room was made in a pool; a pass is posted if a client's
    /// submission waits for room.
    void room_made(const EngineHeld& held);
    /// In recovery's step, before the restore (so that a pool a client
    /// paused starts none of its tasks): the recovered entries' pauses and
    /// resumes, applied in commit order after the paused pools the store
    /// held (taken with every entry by `recovered`).
    void recovered_pools(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, core::Time now);
    /// In recovery's step, after the restore (docs/store.md, "Clients"):
    /// the recovered entries' submissions came back with the other tasks;
    /// their cancels are applied now, and every entry is taken in the
    /// first commit.
    void recovered(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, core::Time now);
    /// Every entry recovery wrote an InboxTaken for is in batch `in`.
    void recovered_in(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, store::Sequence in);

private:
    /// An entry as read, decoded off the engine's mutex.
    struct Incoming {
        store::InboxEntry entry;
        std::optional<TaskRequest> request;
        std::optional<ClientBatchMark> batch;
        std::optional<TaskId> replaces;  // a client's retry of this ended task
        std::string problem;  // why the row cannot be admitted, when it cannot
    };
    enum class Read : std::uint8_t { Done, More, Incomplete };
    class Group;

    /// Posted by `wake`: passes until none is wanted.
    void run();
    /// One read of up to `limit` entries and one step over them.
    Read pass(std::size_t limit);
    void decode(Incoming& in) const;
    /// The submissions of `in[first, first + n)` (one task, or a client's
    /// batch whole); false when they wait for room and stay in the store.
    bool submit(std::vector<Incoming>& in, std::size_t first, std::size_t n, core::Time now, WallTime wall)
        CRONOQ_REQUIRES(s_.mu);
    /// A row the engine never held ends `status` in the store.
    void end_row(const store::TaskRow& row, TaskStatus status, std::string message, WallTime wall)
        CRONOQ_REQUIRES(s_.mu);
    void cancel(TaskId task, core::Time now) CRONOQ_REQUIRES(s_.mu);
    /// A `Pause` or `Resume` entry.
    void pool_op(const store::InboxEntry& e, core::Time now) CRONOQ_REQUIRES(s_.mu);

    SchedulerCore::State& s_;
};

}  // namespace cronoq::detail
