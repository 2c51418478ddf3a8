#pragma once
// The backend-neutral half of store::Journal: the queue of batches, the
// store's own thread (waiting to lead, recovery, the lead loop), group
// commit, backoff and giving up after the lease, reports in order, the
// figures and the latency ring. A backend supplies the database half
// (CommitBackend): one look at the lease, the recovery read, and one write
// transaction that checks the epoch, renews, applies changes, prunes and
// gives the lease up.
#include "../core/fixed_histogram.hpp"
#include "net_changes.hpp"

#include <cronoq/store/journal.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cronoq::store {

/// Names this process in a lease row: pid, host and a per-process number,
/// so two stores of one process differ, and what tells whether it still
/// runs (holder_identity.hpp).
std::string make_holder_name();

/// One write transaction of the lead loop, in this order: the epoch check
/// and the lease renewal, every change of every batch, the prune, giving
/// the lease up. The batches are the net changes of the queued ones
/// (net_changes.hpp), which leave the store as those would.
struct Transaction {
    std::uint64_t epoch = 0;
    std::vector<const Batch*> batches;
    /// Prune terminal rows updated before this, at most `prune_limit`.
    std::optional<WallTime> prune_before;
    std::size_t prune_limit = 0;
    /// A clean release: the lease is free once this commits.
    bool give_up = false;
};

/// The database half of a store's thread. Called on that thread only.
class CommitBackend {
public:
    virtual ~CommitBackend() = default;

    /// Names the store in messages ("/data/s.db", "the PostgreSQL schema x").
    virtual std::string name() const = 0;

    /// One look at the lease: takes it over in a new epoch when nobody
    /// holds it (returned), or returns nothing when another process leads;
    /// may shorten `next_look`, the time until the next one. Throws
    /// StoreError when the store cannot be reached (looked at again after
    /// a backoff).
    virtual std::optional<std::uint64_t> try_take_over(std::chrono::nanoseconds& next_look) = 0;

    /// Right after the takeover: the state to recover (rows updated since
    /// `terminal_since` among the terminal ones) read before anything is
    /// written in the new epoch, then the lease renewed. Throws StoreError:
    /// `Fenced` when leadership is already gone.
    virtual Recovered recover(std::uint64_t epoch, WallTime terminal_since) = 0;

    /// Runs `transaction` and commits it; returns the rows pruned. Throws
    /// StoreError after rolling back: `Fenced` when another process leads
    /// or the session that held leadership is gone (the store stops), any
    /// other kind for a failure that may pass (retried).
    virtual std::size_t commit(const Transaction& transaction) = 0;

    /// Leadership ended, whatever the reason, just before `on_lost`.
    virtual void stopped() {}

    /// While leading: how often the store's thread asks `inbox_signalled`
    /// when it has nothing to commit (zero: never).
    virtual std::chrono::nanoseconds inbox_poll() const { return std::chrono::nanoseconds(0); }
    /// Cheap: whether another connection committed since the last call (or
    /// since `recover`) and the inbox holds entries, so `on_inbox` is due
    /// (docs/store.md, "Clients"). A commit of the leader's own never
    /// signals. Throws StoreError (asked again at the next poll).
    virtual bool inbox_signalled() { return false; }
};

struct PipelineConfig {
    std::chrono::nanoseconds leader_lease{0};
    std::chrono::nanoseconds keep_finished{0};
    /// How long a standby waits at most between looks after failed ones
    /// (doubling from the poll interval).
    std::chrono::nanoseconds standby_backoff_limit{0};
};

/// Implements Journal's `lead`, `enqueue`, `release` and `figures` over a
/// backend. All members are thread-safe. `stop()` (or destruction) releases
/// and joins the thread; the owner calls it before the backend goes.
class CommitPipeline {
public:
    CommitPipeline(CommitBackend& backend, PipelineConfig config);
    ~CommitPipeline();
    CommitPipeline(const CommitPipeline&) = delete;
    CommitPipeline& operator=(const CommitPipeline&) = delete;

    void lead(LeadHandlers handlers);
    Sequence enqueue(Batch batch);
    void release();
    Figures figures() const;
    /// Releases and waits for the store's thread to end.
    void stop();

private:
    struct Queued {
        Sequence sequence;
        Batch batch;  ///< folded in place once it joined a transaction
        std::size_t changes = 0;  ///< as enqueued
    };

    // The store's thread.
    void run();
    std::optional<std::uint64_t> wait_to_lead();
    void lead_loop(std::uint64_t epoch);
    /// The lead loop's clocks and backoff, on the store's thread only.
    struct LeadPace {
        std::chrono::nanoseconds lease{0};
        std::chrono::nanoseconds renew_every{0};
        std::chrono::nanoseconds prune_every{0};
        std::chrono::steady_clock::time_point last_renewal;
        std::chrono::steady_clock::time_point next_prune;
        std::optional<std::chrono::steady_clock::time_point> failing_since;
        std::chrono::nanoseconds backoff{0};
        std::chrono::nanoseconds inbox_every{0};  ///< zero: the backend signals nothing
        std::chrono::steady_clock::time_point next_inbox_look;
    };
    /// Asks the backend whether clients committed, and calls `on_inbox`.
    void look_at_inbox(LeadPace& pace);
    LeadPace start_pace() const;
    /// Folds `group` (net_changes.hpp); returns the changes left.
    std::size_t fold_group(std::vector<Queued>& group);
    /// While `group` holds admissions whose tasks are ready or running, keeps
    /// it open a little and folds into it what arrives meanwhile, so that a
    /// task admitted, started and ended in that time is one row
    /// (docs/store.md, "Holding admissions open"); looks at the inbox
    /// meanwhile. Returns the changes left in `group`, folded, given those
    /// left when called.
    std::size_t hold_open(std::vector<Queued>& group, std::size_t written, LeadPace& pace);
    /// One transaction for `group`, already folded; adds the group's changes
    /// (as queued) to `changes`.
    Transaction make_transaction(std::uint64_t epoch, std::vector<Queued>& group, bool pruning, bool releasing,
                                 std::size_t& changes);
    /// After a failed commit: puts the group back, reports, and backs off;
    /// false when the lead is lost (fenced, or failing for the whole lease).
    bool retry_failed_commit(const StoreError& error, LeadPace& pace, std::chrono::steady_clock::time_point start,
                             Transaction& transaction, std::vector<Queued>& group, std::size_t batches,
                             std::size_t changes);
    /// After a commit: renews the pace, records the figures, reports.
    void report_commit(LeadPace& pace, std::chrono::steady_clock::time_point start, bool pruning, std::size_t pruned,
                       const std::vector<Queued>& group, std::size_t batches, std::size_t changes, std::size_t written,
                       Sequence last);
    /// Takes queued batches, in order, for one transaction (under mutex_).
    std::vector<Queued> take_group();
    void put_back(std::vector<Queued> group);
    void lose(LostReason reason, std::string message, std::optional<StoreErrorKind> recovery_error = std::nullopt);
    /// `changes` as queued, `written` net of what folded.
    void record_commit(std::chrono::nanoseconds latency, std::size_t changes, std::size_t written);
    /// Sleeps up to `duration`; returns early when released.
    void pause(std::chrono::nanoseconds duration);
    std::chrono::nanoseconds poll_interval() const;

    CommitBackend& backend_;
    const PipelineConfig config_;
    NetChanges net_;  ///< the store's thread only
    /// What the store's thread spent on its last small commits, and per
    /// change written on its last large ones (hold_open's budget); the
    /// store's thread only.
    double commit_ns_;
    double ns_per_change_;
    bool per_change_measured_ = false;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Queued> queue_;
    Sequence next_sequence_ = 1;
    Sequence committed_ = 0;  ///< the store's thread only
    bool lead_called_ = false;
    bool release_requested_ = false;
    bool finished_ = false;
    LeadHandlers handlers_;
    std::thread thread_;

    // Figures, under mutex_.
    std::uint64_t commits_ = 0;
    std::uint64_t failed_commits_ = 0;
    std::uint64_t changes_committed_ = 0;  ///< net changes written (docs/store.md, "Net changes")
    std::uint64_t pending_changes_ = 0;
    bool leading_ = false;
    std::uint64_t epoch_ = 0;
    std::vector<std::int64_t> latencies_;  ///< the last `latency_window` commits, a ring
    std::size_t latency_next_ = 0;
    core::detail::FixedHistogram commit_seconds_;  ///< every commit since the store opened
};

}  // namespace cronoq::store
