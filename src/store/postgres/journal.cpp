// The store's thread: waiting for leadership (advisory lock and lease row),
// group commit in pipelined transactions, lease renewal by the server's
// clock, fencing and the background prune.
#include "store_impl.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <unistd.h>

namespace cronoq {

using namespace store;
using namespace store::postgres;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

namespace {

constexpr std::size_t latency_window = 1024;
constexpr std::size_t max_group_changes = 16384;
constexpr std::size_t prune_chunk = 1000;

std::string make_holder() {
    static std::atomic<unsigned> instances{0};
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    std::string out = "pid " + std::to_string(::getpid());
    out += " on ";
    out += host;
    out += " #" + std::to_string(++instances);
    return out;
}

/// The advisory lock's two halves as pg_locks shows them (classid, objid).
Param high_half(std::int64_t key) { return Param(static_cast<std::int64_t>(static_cast<std::uint64_t>(key) >> 32)); }
Param low_half(std::int64_t key) { return Param(static_cast<std::int64_t>(static_cast<std::uint64_t>(key) & 0xffffffffu)); }

}  // namespace

PostgresStore::Impl::Impl(std::string info, PostgresStoreConfig configuration)
    : conninfo(std::move(info)), config(std::move(configuration)), holder(make_holder()) {}

PostgresStore::Impl::~Impl() {
    release();
    if (thread_.joinable()) thread_.join();
}

nanoseconds PostgresStore::Impl::poll_interval() const {
    return std::clamp<nanoseconds>(config.leader_lease / 10, std::chrono::milliseconds(5), std::chrono::milliseconds(100));
}

void PostgresStore::Impl::lead(LeadHandlers handlers) {
    std::lock_guard lock(mutex_);
    if (lead_called_) throw std::logic_error("store::Journal::lead: called twice on one store");
    lead_called_ = true;
    handlers_ = std::move(handlers);
    thread_ = std::thread([this] { run(); });
}

Sequence PostgresStore::Impl::enqueue(Batch batch) {
    std::lock_guard lock(mutex_);
    const Sequence sequence = next_sequence_++;
    if (finished_) return sequence;
    pending_changes_ += batch.changes.size();
    queue_.push_back(Queued{sequence, std::move(batch)});
    wake_.notify_all();
    return sequence;
}

void PostgresStore::Impl::release() {
    std::lock_guard lock(mutex_);
    release_requested_ = true;
    wake_.notify_all();
}

Figures PostgresStore::Impl::figures() const {
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
    return f;
}

void PostgresStore::Impl::pause(nanoseconds duration) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, duration, [&] { return release_requested_; });
}

void PostgresStore::Impl::lose(LostReason reason, std::string message) {
    {
        std::lock_guard lock(mutex_);
        finished_ = true;
        leading_ = false;
        queue_.clear();
        pending_changes_ = 0;
    }
    // A leader that stops for any reason gives its session up: the advisory
    // lock goes with it and a standby takes over at its next look.
    writer.reset();
    if (handlers_.on_lost) handlers_.on_lost(LeadershipLost{reason, std::move(message)});
}

void PostgresStore::Impl::run() {
    const std::optional<std::uint64_t> epoch = wait_to_lead();
    if (!epoch) {
        lose(LostReason::Released, "released before this process led the PostgreSQL schema " + names->schema);
        return;
    }
    Recovered recovered;
    try {
        writer->exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
        Result row = writer->exec("SELECT epoch FROM " + names->leader + " WHERE id = 1 FOR UPDATE");
        if (row.rows() != 1 || static_cast<std::uint64_t>(row.int64(0, 0)) != *epoch)
            throw StoreError(StoreErrorKind::Fenced, "fenced: another process took leadership over during recovery");
        recovered = load(*writer, *names, age_cutoff(system_clock::now(), handlers_.retention));
        writer->exec("UPDATE " + names->leader + " SET expires_at = " + lease_expiry(1) + " WHERE id = 1",
                     {lease_param(config.leader_lease)});
        writer->exec("COMMIT");
    } catch (const StoreError& error) {
        const bool fenced = error.kind() == StoreErrorKind::Fenced || !writer->alive();
        lose(fenced ? LostReason::Fenced : LostReason::Failed, std::string("cannot recover: ") + error.what());
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

std::optional<std::uint64_t> PostgresStore::Impl::try_lead() {
    if (!writer || !writer->alive()) {
        writer.reset();
        writer = std::make_unique<Connection>(conninfo, nanoseconds(0));
    }
    Result locked = writer->exec("SELECT pg_try_advisory_lock($1::bigint)", {Param(names->lock_key)});
    if (locked.boolean(0, 0)) {
        // The session that led is gone (released, terminated or dropped):
        // whatever it had not committed never will be. A new epoch fences
        // anything that still believes it leads.
        Result taken = writer->exec("UPDATE " + names->leader +
                                        " SET epoch = epoch + 1, holder = $1, backend_pid = pg_backend_pid(), "
                                        "expires_at = " + lease_expiry(2) + " WHERE id = 1 RETURNING epoch",
                                    {Param(holder), lease_param(config.leader_lease)});
        if (taken.rows() != 1) {
            std::string what = "the PostgreSQL schema " + names->schema;
            what += " has no leader row";
            throw StoreError(StoreErrorKind::Corrupt, what);
        }
        return static_cast<std::uint64_t>(taken.int64(0, 0));
    }
    // Another session holds the lock. Once its lease ran out by the
    // server's clock (a frozen or partitioned leader), end that session so
    // the lock is freed; its process is fenced when it wakes.
    Result holder_row = writer->exec(
        "SELECT expires_at <= now(), (SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
        "AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.objsubid = 1 "
        "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1) FROM " +
            names->leader + " WHERE id = 1",
        {high_half(names->lock_key), low_half(names->lock_key)});
    if (holder_row.rows() == 1 && holder_row.boolean(0, 0) && !holder_row.is_null(0, 1))
        writer->exec("SELECT pg_terminate_backend($1::integer)", {Param(holder_row.int64(0, 1))});
    return std::nullopt;
}

std::optional<std::uint64_t> PostgresStore::Impl::wait_to_lead() {
    nanoseconds backoff = poll_interval();
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (release_requested_) return std::nullopt;
        }
        nanoseconds wait = poll_interval();
        try {
            if (auto epoch = try_lead()) return epoch;
            backoff = poll_interval();
        } catch (const StoreError&) {
            // A standby is patient: a server that is away is tried again,
            // with backoff up to a second.
            wait = backoff;
            backoff = std::min<nanoseconds>(backoff * 2, std::chrono::seconds(1));
        }
        pause(wait);
    }
}

std::vector<PostgresStore::Impl::Queued> PostgresStore::Impl::take_group() {
    std::vector<Queued> group;
    std::size_t changes = 0;
    while (!queue_.empty() && (group.empty() || changes + queue_.front().batch.changes.size() <= max_group_changes)) {
        changes += queue_.front().batch.changes.size();
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
    }
    return group;
}

void PostgresStore::Impl::put_back(std::vector<Queued> group) {
    std::lock_guard lock(mutex_);
    for (auto it = group.rbegin(); it != group.rend(); ++it) queue_.push_front(std::move(*it));
}

void PostgresStore::Impl::record_commit(nanoseconds latency, std::size_t changes) {
    std::lock_guard lock(mutex_);
    ++commits_;
    changes_committed_ += changes;
    pending_changes_ -= std::min<std::uint64_t>(pending_changes_, changes);
    if (latencies_.size() < latency_window) latencies_.push_back(latency.count());
    else latencies_[latency_next_] = latency.count();
    latency_next_ = (latency_next_ + 1) % latency_window;
}

void PostgresStore::Impl::lead_loop(std::uint64_t epoch) {
    const nanoseconds lease = config.leader_lease;
    const nanoseconds renew_every = std::min<nanoseconds>(lease / 3, std::chrono::hours(1));
    const nanoseconds prune_every = std::clamp<nanoseconds>(config.keep_finished / 10, std::chrono::seconds(1),
                                                             std::chrono::minutes(1));
    const Names& n = *names;
    const std::string check_sql = "SELECT epoch, holder FROM " + n.leader + " WHERE id = 1 FOR UPDATE";
    const std::string renew_sql = "UPDATE " + n.leader + " SET expires_at = " + lease_expiry(1) + " WHERE id = 1";
    const std::string give_up_sql =
        "UPDATE " + n.leader + " SET holder = NULL, backend_pid = NULL, expires_at = " + lease_expiry(1) + " WHERE id = 1";
    steady_clock::time_point last_renewal = steady_clock::now();
    steady_clock::time_point next_prune = steady_clock::now();
    std::optional<steady_clock::time_point> failing_since;
    nanoseconds backoff = std::chrono::milliseconds(2);

    for (;;) {
        std::vector<Queued> group;
        bool releasing = false;
        {
            std::unique_lock lock(mutex_);
            wake_.wait_until(lock, std::min(last_renewal + renew_every, next_prune),
                             [&] { return !queue_.empty() || release_requested_; });
            group = take_group();
            releasing = release_requested_ && queue_.empty();
        }
        const steady_clock::time_point start = steady_clock::now();
        const bool pruning = group.empty() && !releasing && start >= next_prune;
        if (group.empty() && !releasing && !pruning && start < last_renewal + renew_every) continue;

        std::size_t changes = 0;
        for (const Queued& queued : group) changes += queued.batch.changes.size();
        const std::size_t batches = group.size();
        const Sequence last = group.empty() ? 0 : group.back().sequence;
        std::size_t pruned = 0;
        try {
            // One pipelined transaction: the epoch check (a row lock on the
            // lease), the renewal, every change in order, then COMMIT only
            // if the epoch is still this one's.
            std::vector<Query> queries;
            queries.reserve(changes + 5);
            queries.push_back(Query{"BEGIN", {}});
            queries.push_back(Query{check_sql, {}});
            queries.push_back(Query{renew_sql, {lease_param(lease)}});
            ChangeStatements statements(n, queries);
            for (const Queued& queued : group)
                for (const Change& change : queued.batch.changes) statements.add(change);
            statements.finish();
            if (pruning)
                queries.push_back(Query{prune_sql(n), {Param(to_stored(age_cutoff(system_clock::now(), config.keep_finished))),
                                                       Param(static_cast<std::int64_t>(prune_chunk))}});
            if (releasing) queries.push_back(Query{give_up_sql, {lease_param(lease)}});
            std::vector<Result> results;
            try {
                results = writer->pipeline(queries);
            } catch (const StoreError&) {
                if (writer->alive()) writer->exec("ROLLBACK");
                throw;
            }
            const auto current = static_cast<std::uint64_t>(results[1].int64(0, 0));
            if (current != epoch) {
                const std::string by = results[1].optional_text(0, 1).value_or("none");
                writer->exec("ROLLBACK");
                std::string what = "fenced: another process (" + by;
                what += ") took leadership of the PostgreSQL schema " + n.schema;
                what += " over in epoch " + std::to_string(current);
                what += "; this process led epoch " + std::to_string(epoch);
                throw StoreError(StoreErrorKind::Fenced, what);
            }
            if (pruning) pruned = static_cast<std::size_t>(results[results.size() - (releasing ? 2 : 1)].affected());
            writer->exec("COMMIT");
            if (releasing) {
                // The lease row is released already; the session's end frees
                // the lock too, so a failed unlock changes nothing.
                try {
                    writer->exec("SELECT pg_advisory_unlock($1::bigint)", {Param(n.lock_key)});
                } catch (const StoreError&) {
                }
            }
        } catch (const StoreError& error) {
            if (error.kind() == StoreErrorKind::Fenced) {
                lose(LostReason::Fenced, error.what());
                return;
            }
            if (!writer || !writer->alive()) {
                // The session and with it the advisory lock are gone: a
                // standby may lead already. Never reconnect to lead.
                std::string what = "fenced: the connection to the PostgreSQL server was lost, and with it the "
                                   "leader's lock on schema " + n.schema;
                what += ": ";
                what += error.what();
                lose(LostReason::Fenced, what);
                return;
            }
            if (!failing_since) failing_since = start;
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
                report.failing_since = failing_since;
                handlers_.on_commit(report);
            }
            if (steady_clock::now() - *failing_since >= lease) {
                lose(LostReason::Failed,
                     std::string("commits to the store failed for the whole leader lease: ") + error.what());
                return;
            }
            std::this_thread::sleep_for(backoff);
            backoff = std::min<nanoseconds>(backoff * 2, std::max<nanoseconds>(lease / 4, std::chrono::milliseconds(1)));
            continue;
        }
        const steady_clock::time_point end = steady_clock::now();
        last_renewal = start;
        failing_since.reset();
        backoff = std::chrono::milliseconds(2);
        if (pruning) next_prune = end + (pruned == prune_chunk ? nanoseconds(0) : prune_every);
        if (!group.empty()) {
            record_commit(end - start, changes);
            committed_ = last;
            if (handlers_.on_commit) {
                CommitReport report;
                report.committed = last;
                report.batches = batches;
                report.changes = changes;
                handlers_.on_commit(report);
            }
        }
        if (releasing) {
            lose(LostReason::Released, "leadership of the PostgreSQL schema " + n.schema + " released");
            return;
        }
    }
}

}  // namespace cronoq
