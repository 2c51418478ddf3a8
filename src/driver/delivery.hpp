#pragma once
// What a step leaves for after the engine's mutex, delivered in the
// engine's order (docs/design.md, "Engine steps"): handles completed,
// events published, log lines written, the shutdown's waiters woken. With
// a store, a result or an acknowledgement waits here for the commit of its
// step (docs/guide/durability.md), and fails if the lead ends first.
//
// The next step cannot deliver before the previous one has: a step takes
// this mutex before it lets go of the engine's (`deliver_step`). The commit
// side shares the mutex, so that a result is either held before its commit
// is seen, or delivered at once.
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/thread_safety.hpp>
#include <cronoq/detail/unique_function.hpp>
#include <cronoq/detail/wait_list.hpp>
#include <cronoq/status_event.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include "attempt_state.hpp"
#include "engine_mutex.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace cronoq::detail {

class EventQueue;

/// Work a step leaves for after the engine's mutex.
struct Finish {  // a handle's terminal outcome
    std::shared_ptr<TaskRecord> record;
    TaskStatus status = TaskStatus::Ready;
    std::uint32_t attempt = 0;
    std::string message;
    ErasedValue output;
};
struct Drained {};  // shutdown is complete: wake its waiters
struct Ack {        // a submitter or `flush` waiting for the step's commit
    std::shared_ptr<WaitList> done;
};
using Deferred = std::variant<Finish, StatusEvent, UniqueFunction<void()>, Drained, Ack>;

class Delivery {
public:
    /// Ends a step's hold of the engine: takes this mutex, lets go of
    /// `engine`, and delivers `work` (emptied, its buffer kept); with a
    /// store, results and acknowledgements wait until `step_seq` is
    /// committed (0: no store).
    void deliver_step(std::vector<Deferred>& work, std::unique_lock<EngineMutex>& engine, store::Sequence step_seq)
        CRONOQ_NO_THREAD_SAFETY_ANALYSIS {
        std::unique_lock delivery(mu_);
        delivering_.swap(work);  // both buffers keep their capacity
        engine.unlock();
        deliver(step_seq);
        delivering_.clear();
    }

    // ---- subscribers ---------------------------------------------------------------
    /// Whether a step should make events; read under the engine's mutex.
    bool has_subscribers() const { return subscriber_count_.load(std::memory_order_relaxed) > 0; }
    /// Adds `q` (the caller holds the engine's mutex: a step that sees the
    /// count publishes to it); false when the shutdown completed (`q` closed).
    bool subscribe(const std::shared_ptr<EventQueue>& q);
    /// Set once the shutdown completed.
    const std::shared_ptr<WaitList>& drained() const { return drained_; }

    // ---- commits (with a store) --------------------------------------------------------
    /// The store committed up to `seq`: what waited for it is delivered.
    void committed(store::Sequence seq);
    /// The lead ended (`lost`): what waits for a commit fails; `open()`'s
    /// error is kept.
    void lead_lost(const store::LeadershipLost& lost);
    /// Sets `done` once `seq` is committed or the lead is lost.
    void wait_commit(store::Sequence seq, std::shared_ptr<WaitList> done);
    /// Blocks this thread until `seq` is committed or the lead is lost.
    void block_until_committed(store::Sequence seq);
    bool is_committed(store::Sequence seq);
    /// Every batch up to this one is committed.
    store::Sequence committed_through();
    /// Why the lead ended; empty while it has not.
    std::optional<std::string> lost();
    /// Throws what ended the lead before `open()` could return.
    void throw_open_error();
    /// The recovery refused to lead (a pool of another shard): open()
    /// throws ConfigError(`why`).
    void refuse_open(std::string why);

private:
    void deliver(store::Sequence step_seq) CRONOQ_REQUIRES(mu_);
    void deliver_one(Deferred& d) CRONOQ_REQUIRES(mu_);
    /// A result or acknowledgement whose commit will never come.
    void fail_uncommitted(Deferred& d) CRONOQ_REQUIRES(mu_);

    LightMutex mu_;
    std::vector<Deferred> delivering_ CRONOQ_GUARDED_BY(mu_);  // a step's work; its buffer is reused
    std::vector<std::weak_ptr<EventQueue>> subscribers_ CRONOQ_GUARDED_BY(mu_);
    std::atomic<std::size_t> subscriber_count_{0};
    std::shared_ptr<WaitList> drained_ = WaitList::create();

    store::Sequence committed_ CRONOQ_GUARDED_BY(mu_) = 0;
    // Handle results and acknowledgements, released when their step's
    // commit is: the sequence to wait for, then the work.
    std::multimap<store::Sequence, Deferred> held_ CRONOQ_GUARDED_BY(mu_);
    std::optional<std::string> lost_ CRONOQ_GUARDED_BY(mu_);  // why the lead ended, once it has
    std::condition_variable_any commit_seen_;  // notified when `committed_` or `lost_` changes
    std::optional<StoreError> open_error_ CRONOQ_GUARDED_BY(mu_);
    std::optional<std::string> refused_ CRONOQ_GUARDED_BY(mu_);
};

}  // namespace cronoq::detail
