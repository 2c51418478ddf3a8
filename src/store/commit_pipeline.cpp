// The store's thread, whatever the backend: waiting for leadership, group
// commit, lease renewal when idle, backoff and giving up after the lease,
// the background prune's pace, reports in order and the figures.
#include "commit_pipeline.hpp"

#include "holder_identity.hpp"
#include "stored_values.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <unistd.h>

namespace cronoq::store {

using std::chrono::nanoseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

namespace {

constexpr std::size_t latency_window = 1024;
/// A transaction stops taking batches beyond this many changes, so one
/// commit's latency (and a failed one's retry) stays bounded.
constexpr std::size_t max_group_changes = 16384;
/// A group with admissions stays open (hold_open) at most as long as its
/// commit is expected to take, so an acknowledgement waits at most about
/// twice as long as without the hold; and it waits half that, and at least
/// this long, for the next batch: a lone task that runs longer has its
/// admission committed after one quiet wait, a delay of the order of one
/// sync.
constexpr std::chrono::microseconds hold_quiet(1000);
/// The expected cost of a commit until one was measured: a fixed part (the
/// sync, the round trips) and a part per change written (about what a
/// SQLite or PostgreSQL commit costs on the store's thread).
constexpr double initial_commit_ns = 1e6;
constexpr double initial_ns_per_change = 2500.0;
/// A commit of fewer changes measures the fixed part, of more the part per change.
constexpr std::size_t large_commit = 1024;
/// Rows the background prune deletes per transaction, so the commit it
/// rides in stays short.
constexpr std::size_t prune_chunk = 1000;

}  // namespace

std::string make_holder_name() { return HolderIdentity::current().text(); }

CommitPipeline::CommitPipeline(CommitBackend& backend, PipelineConfig config)
    : backend_(backend), config_(config), commit_ns_(initial_commit_ns), ns_per_change_(initial_ns_per_change) {}

CommitPipeline::~CommitPipeline() { stop(); }

void CommitPipeline::stop() {
    release();
    if (thread_.joinable()) thread_.join();
}

nanoseconds CommitPipeline::poll_interval() const {
    // A standby looks this often for a released or expired lease: one
    // small read, cheap enough to keep takeover after a release quick
    // whatever the lease.
    return std::clamp<nanoseconds>(config_.leader_lease / 10, std::chrono::milliseconds(5),
                                   std::chrono::milliseconds(100));
}

void CommitPipeline::lead(LeadHandlers handlers) {
    std::lock_guard lock(mutex_);
    if (lead_called_) throw std::logic_error("store::Journal::lead: called twice on one store");
    lead_called_ = true;
    handlers_ = std::move(handlers);
    thread_ = std::thread([this] { run(); });
}

Sequence CommitPipeline::enqueue(Batch batch) {
    std::lock_guard lock(mutex_);
    const Sequence sequence = next_sequence_++;
    if (finished_) return sequence;
    pending_changes_ += batch.changes.size();
    const std::size_t changes = batch.changes.size();
    queue_.push_back(Queued{sequence, std::move(batch), changes});
    wake_.notify_all();
    return sequence;
}

void CommitPipeline::release() {
    std::lock_guard lock(mutex_);
    release_requested_ = true;
    wake_.notify_all();
}

Figures CommitPipeline::figures() const {
    std::lock_guard lock(mutex_);
    Figures f;
    f.commits = commits_;
    f.failed_commits = failed_commits_;
    f.changes_committed = changes_committed_;
    f.mean_batch_size = commits_ ? static_cast<double>(changes_committed_) / static_cast<double>(commits_) : 0.0;
    if (!latencies_.empty()) {
        std::vector<std::int64_t> sorted = latencies_;
        std::sort(sorted.begin(), sorted.end());
        const auto at = [&](double q) { return nanoseconds(sorted[static_cast<std::size_t>(q * double(sorted.size() - 1))]); };
        f.commit_latency_p50 = at(0.50);
        f.commit_latency_p99 = at(0.99);
    }
    f.pending_changes = pending_changes_;
    f.leading = leading_;
    f.epoch = epoch_;
    f.commit_seconds = commit_seconds_.read();
    return f;
}

void CommitPipeline::pause(nanoseconds duration) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, duration, [&] { return release_requested_; });
}

void CommitPipeline::lose(LostReason reason, std::string message, std::optional<StoreErrorKind> recovery_error) {
    {
        std::lock_guard lock(mutex_);
        finished_ = true;
        leading_ = false;
        queue_.clear();
        pending_changes_ = 0;
    }
    backend_.stopped();
    if (handlers_.on_lost) handlers_.on_lost(LeadershipLost{reason, std::move(message), recovery_error});
}

void CommitPipeline::run() {
    const std::optional<std::uint64_t> epoch = wait_to_lead();
    if (!epoch) {
        lose(LostReason::Released, "released before this process led " + backend_.name());
        return;
    }
    Recovered recovered;
    try {
        recovered = backend_.recover(*epoch, age_cutoff(system_clock::now(), handlers_.retention));
    } catch (const StoreError& error) {
        lose(error.kind() == StoreErrorKind::Fenced ? LostReason::Fenced : LostReason::Failed,
             std::string("cannot recover: ") + error.what(), error.kind());
        return;
    }
    recovered.epoch = *epoch;
    {
        std::lock_guard lock(mutex_);
        leading_ = true;
        epoch_ = *epoch;
    }
    if (handlers_.on_leading) handlers_.on_leading(std::move(recovered));
    lead_loop(*epoch);
}

std::optional<std::uint64_t> CommitPipeline::wait_to_lead() {
    nanoseconds backoff = poll_interval();
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (release_requested_) return std::nullopt;
        }
        nanoseconds wait = poll_interval();
        try {
            if (auto epoch = backend_.try_take_over(wait)) return epoch;
            backoff = poll_interval();
        } catch (const StoreError&) {
            // A standby is patient: a store that is busy, failing or away
            // is looked at again, with backoff up to the backend's limit.
            wait = backoff;
            backoff = std::min<nanoseconds>(backoff * 2, std::max(config_.standby_backoff_limit, poll_interval()));
        }
        pause(wait);
    }
}

std::vector<CommitPipeline::Queued> CommitPipeline::take_group() {
    std::vector<Queued> group;
    std::size_t changes = 0;
    while (!queue_.empty() && (group.empty() || changes + queue_.front().changes <= max_group_changes)) {
        changes += queue_.front().changes;
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
    }
    return group;
}

void CommitPipeline::put_back(std::vector<Queued> group) {
    std::lock_guard lock(mutex_);
    for (auto it = group.rbegin(); it != group.rend(); ++it) queue_.push_front(std::move(*it));
}

void CommitPipeline::record_commit(nanoseconds latency, std::size_t changes, std::size_t written) {
    std::lock_guard lock(mutex_);
    ++commits_;
    changes_committed_ += written;
    pending_changes_ -= std::min<std::uint64_t>(pending_changes_, changes);
    if (latencies_.size() < latency_window) latencies_.push_back(latency.count());
    else latencies_[latency_next_] = latency.count();
    latency_next_ = (latency_next_ + 1) % latency_window;
    commit_seconds_.record(latency);
}

CommitPipeline::LeadPace CommitPipeline::start_pace() const {
    LeadPace pace;
    pace.lease = config_.leader_lease;
    // Bounded so that steady-clock deadlines cannot overflow with a huge lease.
    pace.renew_every = std::min<nanoseconds>(pace.lease / 3, std::chrono::hours(1));
    // Pruned in chunks at this pace, so a large backlog goes over time.
    pace.prune_every = std::clamp<nanoseconds>(config_.keep_finished / 10, std::chrono::seconds(1),
                                               std::chrono::minutes(1));
    pace.last_renewal = steady_clock::now();
    pace.next_prune = steady_clock::now();
    pace.backoff = std::chrono::milliseconds(2);
    pace.inbox_every = backend_.inbox_poll();
    pace.next_inbox_look = steady_clock::now();
    return pace;
}

std::size_t CommitPipeline::fold_group(std::vector<Queued>& group) {
    // The group commits as a whole or not at all, so its net effect is what
    // it leaves. Folded in place: a failed commit puts the folded batches
    // back, which leave the same, and folding them again changes nothing.
    net_.start();
    std::size_t written = 0;
    for (Queued& queued : group) written += net_.add(queued.batch);
    return written;
}

std::size_t CommitPipeline::hold_open(std::vector<Queued>& group, std::size_t written, LeadPace& pace) {
    // Why wait: an idle store takes a batch of admissions at once, and the
    // tasks then run while it commits, so each is written twice, admitted
    // and ended. Held while their ends keep arriving, the ends fold into
    // the inserts. Only the time of the commit moves: batches still commit
    // whole and in order, and what waits for them waits a little longer.
    // Bounded: about the commit's own expected duration, its fixed part and
    // its changes' (a tenth of the lease at most, so the renewal it carries
    // stays well within the lease); a quiet wait without a batch; the
    // group's size.
    const steady_clock::time_point since = steady_clock::now();
    const auto limit = std::min<nanoseconds>(pace.lease / 10, std::chrono::seconds(1));
    // What does not fold (other tasks' changes, id marks) grows the group,
    // by one group's bound at most.
    const std::size_t net_limit = written + max_group_changes;
    steady_clock::time_point last_batch = since;
    while (net_.open_inserts() > 0 && written <= net_limit) {
        const auto budget = std::clamp<nanoseconds>(
            nanoseconds(static_cast<std::int64_t>(commit_ns_ + ns_per_change_ * static_cast<double>(written))),
            hold_quiet, limit);
        const steady_clock::time_point deadline = since + budget;
        if (steady_clock::now() >= deadline) break;
        // Clients' submissions are looked for at the idle pace meanwhile: a
        // client's task starts without waiting for the hold, and what the
        // leader makes of it joins the group.
        if (pace.inbox_every.count() > 0 && steady_clock::now() >= pace.next_inbox_look) look_at_inbox(pace);
        std::vector<Queued> more;
        {
            std::unique_lock lock(mutex_);
            // Up to half the budget for the next batch: the ends come from
            // threads that a loaded machine (slow commits, a larger
            // budget) pauses for longer too.
            const steady_clock::time_point quiet_end =
                std::min(deadline, last_batch + std::max<nanoseconds>(hold_quiet, budget / 2));
            steady_clock::time_point until = quiet_end;
            if (pace.inbox_every.count() > 0) until = std::min(until, pace.next_inbox_look);
            wake_.wait_until(lock, until, [&] { return !queue_.empty() || release_requested_; });
            if (release_requested_) break;
            if (queue_.empty()) {
                if (steady_clock::now() >= quiet_end) break;
                continue;  // the inbox is due
            }
            more = take_group();
        }
        // Moving a Queued keeps its changes where they are, so the fold's
        // index into the earlier batches stays valid.
        for (Queued& queued : more) {
            written += net_.add(queued.batch);
            group.push_back(std::move(queued));
        }
        last_batch = steady_clock::now();
    }
    return written;
}

Transaction CommitPipeline::make_transaction(std::uint64_t epoch, std::vector<Queued>& group, bool pruning,
                                             bool releasing, std::size_t& changes) {
    Transaction transaction;
    transaction.epoch = epoch;
    transaction.batches.reserve(group.size());
    for (Queued& queued : group) {
        changes += queued.changes;
        transaction.batches.push_back(&queued.batch);
    }
    if (pruning) {
        transaction.prune_before = age_cutoff(system_clock::now(), config_.keep_finished);
        transaction.prune_limit = prune_chunk;
    }
    transaction.give_up = releasing;
    return transaction;
}

bool CommitPipeline::retry_failed_commit(const StoreError& error, LeadPace& pace, steady_clock::time_point start,
                                         Transaction& transaction, std::vector<Queued>& group, std::size_t batches,
                                         std::size_t changes) {
    if (error.kind() == StoreErrorKind::Fenced) {
        lose(LostReason::Fenced, error.what());
        return false;
    }
    if (!pace.failing_since) pace.failing_since = start;
    transaction.batches.clear();
    put_back(std::move(group));
    {
        std::lock_guard lock(mutex_);
        ++failed_commits_;
    }
    if (handlers_.on_commit) {
        CommitReport report;
        report.committed = committed_;
        report.batches = batches;
        report.changes = changes;
        report.error = error;
        report.failing_since = pace.failing_since;
        handlers_.on_commit(report);
    }
    if (steady_clock::now() - *pace.failing_since >= pace.lease) {
        lose(LostReason::Failed,
             std::string("commits to the store failed for the whole leader lease: ") + error.what());
        return false;
    }
    // Not cut short by release(): a release retries like any commit.
    std::this_thread::sleep_for(pace.backoff);
    pace.backoff =
        std::min<nanoseconds>(pace.backoff * 2, std::max<nanoseconds>(pace.lease / 4, std::chrono::milliseconds(1)));
    return true;
}

void CommitPipeline::report_commit(LeadPace& pace, steady_clock::time_point start, bool pruning, std::size_t pruned,
                                   const std::vector<Queued>& group, std::size_t batches, std::size_t changes,
                                   std::size_t written, Sequence last) {
    const steady_clock::time_point end = steady_clock::now();
    pace.last_renewal = start;
    pace.failing_since.reset();
    pace.backoff = std::chrono::milliseconds(2);
    if (pruning) pace.next_prune = end + (pruned == prune_chunk ? nanoseconds(0) : pace.prune_every);
    if (!group.empty()) {
        record_commit(end - start, changes, written);
        const auto took = static_cast<double>((end - start).count());
        if (written >= large_commit) {
            ns_per_change_ = 0.5 * ns_per_change_ + 0.5 * took / static_cast<double>(written);
            per_change_measured_ = true;
        } else {
            commit_ns_ = 0.5 * commit_ns_ + 0.5 * took;
            // Until a large commit says what a change costs, a machine whose
            // small commits are slower than expected is taken to be as much
            // slower per change (a loaded machine: the tasks run slower too).
            if (!per_change_measured_)
                ns_per_change_ = initial_ns_per_change * std::max(1.0, commit_ns_ / initial_commit_ns);
        }
        committed_ = last;
        if (handlers_.on_commit) {
            CommitReport report;
            report.committed = last;
            report.batches = batches;
            report.changes = changes;
            handlers_.on_commit(report);
        }
    }
}

void CommitPipeline::look_at_inbox(LeadPace& pace) {
    pace.next_inbox_look = steady_clock::now() + pace.inbox_every;
    bool signalled = false;
    try {
        signalled = backend_.inbox_signalled();
    } catch (const StoreError&) {
        // Asked again at the next look; a store that stays away shows in
        // the commits, which fail and are reported.
    }
    if (signalled && handlers_.on_inbox) handlers_.on_inbox();
}

void CommitPipeline::lead_loop(std::uint64_t epoch) {
    LeadPace pace = start_pace();
    for (;;) {
        std::vector<Queued> group;
        bool releasing = false;
        {
            std::unique_lock lock(mutex_);
            auto until = std::min(pace.last_renewal + pace.renew_every, pace.next_prune);
            if (pace.inbox_every.count() > 0) until = std::min(until, pace.next_inbox_look);
            wake_.wait_until(lock, until, [&] { return !queue_.empty() || release_requested_; });
            group = take_group();
            releasing = release_requested_ && queue_.empty();
        }
        if (pace.inbox_every.count() > 0 && !releasing && steady_clock::now() >= pace.next_inbox_look) {
            look_at_inbox(pace);
            // on_inbox may have queued what it made of the entries.
            if (group.empty()) {
                std::lock_guard lock(mutex_);
                group = take_group();
            }
        }
        std::size_t written = fold_group(group);
        // Not while retrying a failed commit, nor when giving the lead up.
        if (!group.empty() && !releasing && !pace.failing_since) written = hold_open(group, written, pace);
        const steady_clock::time_point start = steady_clock::now();
        const bool pruning = group.empty() && !releasing && start >= pace.next_prune;
        if (group.empty() && !releasing && !pruning && start < pace.last_renewal + pace.renew_every) continue;

        std::size_t changes = 0;
        Transaction transaction = make_transaction(epoch, group, pruning, releasing, changes);
        const std::size_t batches = group.size();
        const Sequence last = group.empty() ? 0 : group.back().sequence;
        std::size_t pruned = 0;
        try {
            pruned = backend_.commit(transaction);
        } catch (const StoreError& error) {
            if (!retry_failed_commit(error, pace, start, transaction, group, batches, changes)) return;
            continue;
        }
        report_commit(pace, start, pruning, pruned, group, batches, changes, written, last);
        if (releasing) {
            lose(LostReason::Released, "leadership of " + backend_.name() + " released");
            return;
        }
    }
}

}  // namespace cronoq::store
