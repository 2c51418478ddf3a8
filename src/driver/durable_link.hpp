#pragma once
// A scheduler's link to its store (docs/guide/durability.md): the changes of
// each engine step, enqueued at its end for the store's commit queue; the
// lead (writing from recovery until the lead is lost or given up); the ids
// reserved ahead; and how the store's thread reaches the scheduler. What
// waits for a commit is Delivery's (delivery.hpp). Writes happen in engine
// steps (an `EngineHeld`).
#include <cronoq/core/action.hpp>
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include "attempt_state.hpp"
#include "encoder.hpp"
#include "engine_mutex.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace cronoq::detail {

/// How the store's thread reaches the scheduler. The handlers given to
/// `Journal::lead` hold this, never the scheduler itself: a handler that
/// owned the scheduler could be the last owner, and the scheduler would then
/// be destroyed, with its store, on the store's own thread (which cannot
/// join itself). The scheduler clears `state` when it goes; it waits for a
/// handler that is running, and later reports find no one.
struct StoreLink {
    std::mutex mu;
    SchedulerCore::State* state = nullptr;  // guarded by `mu`

    template <class F>
    void with_state(F&& f) {
        std::lock_guard lock(mu);
        if (state) f(*state);
    }
    void disconnect() {
        std::lock_guard lock(mu);
        state = nullptr;
    }
};

class DurableLink {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit DurableLink(std::shared_ptr<Store> s) : store_(std::move(s)), journal_(store_->journal()) {}

    /// Thread-safe: the journal locks itself.
    store::Journal& journal() const { return journal_; }
    const std::shared_ptr<StoreLink>& link() const { return link_; }
    /// Set once open() may return (leading, or never).
    const std::shared_ptr<WaitList>& leading() const { return leading_; }
    /// Set once the lead ended.
    const std::shared_ptr<WaitList>& lost_waits() const { return lost_waits_; }

    // ---- the lead (engine steps) --------------------------------------------------------
    void start_writing(const EngineHeld&) { writing_ = true; }
    bool writing(const EngineHeld&) const { return writing_; }
    /// The lead ended (on_lost): nothing is written any more.
    void end_lead(const EngineHeld&);
    bool lead_ended(const EngineHeld&) const { return lead_ended_; }
    /// Shutdown handed everything over: the lead is given up at the end of
    /// this step, after its changes.
    void release_after_step(const EngineHeld&) { release_due_ = true; }
    /// A fresh engine (recovery): the first commit reserves a block of ids above it.
    void reset_reserved(const EngineHeld&) { reserved_ = {0, 0}; }

    // ---- this step's changes, while this process leads (engine steps) -------------------
    void write(const EngineHeld&, store::Change change) {
        if (writing_) batch_.changes.push_back(std::move(change));
    }
    /// The row of a task just admitted, in status `status`.
    void write_admission(const EngineHeld&, TaskId id, const TaskRecord& record, TaskStatus status, const Encoded& encoded);
    void write_status(const EngineHeld&, const core::Status& s, const TaskRecord& record, core::Time now, WallTime wall);
    /// A recovered row that cannot come back ends failed.
    void write_failed(const EngineHeld& held, TaskId id, std::uint32_t attempt, std::string message, WallTime wall) {
        write_ended(held, id, TaskStatus::Failed, attempt, std::move(message), wall);
    }
    /// A stored row the engine never held ends `status` (a client's row
    /// refused or cancelled at ingestion, docs/store.md "Clients").
    void write_ended(const EngineHeld&, TaskId id, TaskStatus status, std::uint32_t attempt, std::string message,
                     WallTime wall);
    /// At the end of a step: enqueues its changes (with the ids reserved
    /// ahead of the engine's next ones); returns the sequence its results
    /// must wait for.
    store::Sequence enqueue_step(const EngineHeld&, const core::Engine& engine);
    /// Enqueues what this step wrote so far, now rather than at its end
    /// (ingestion needs the sequence its InboxTaken commits in); as
    /// enqueue_step, without giving the lead up.
    store::Sequence enqueue_now(const EngineHeld& held, const core::Engine& engine);
    /// The sequence of everything enqueued so far.
    store::Sequence enqueued(const EngineHeld&) const { return enqueued_; }

private:
    static constexpr std::uint64_t id_block = 4096;

    std::shared_ptr<Store> store_;
    store::Journal& journal_;
    std::shared_ptr<StoreLink> link_ = std::make_shared<StoreLink>();
    std::shared_ptr<WaitList> leading_ = WaitList::create();
    std::shared_ptr<WaitList> lost_waits_ = WaitList::create();

    store::Batch batch_;     // the current step's changes, enqueued at its end
    bool writing_ = false;   // from recovery until the lead is lost or given up
    bool lead_ended_ = false;
    bool release_due_ = false;
    bool release_asked_ = false;
    store::Sequence enqueued_ = 0;
    // Ids below these may be handed out: reserved ahead in the store, in
    // blocks, so that a new leader never reuses one this process used.
    core::NextIds reserved_{0, 0};
};

}  // namespace cronoq::detail
