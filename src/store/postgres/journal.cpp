// The PostgreSQL half of the store's thread: a look at the advisory lock
// and the lease row (ending the session of a leader whose lease ran out by
// the server's clock), the recovery read, and one pipelined transaction
// per commit (epoch check and renewal, changes, prune, giving the lease
// up). A lost session is fencing: the lock went with it.
#include "store_impl.hpp"

namespace cronoq {

using namespace store;
using namespace store::postgres;
using std::chrono::nanoseconds;

namespace {

/// The advisory lock's two halves as pg_locks shows them (classid, objid).
Param high_half(std::int64_t key) { return Param(static_cast<std::int64_t>(static_cast<std::uint64_t>(key) >> 32)); }
Param low_half(std::int64_t key) { return Param(static_cast<std::int64_t>(static_cast<std::uint64_t>(key) & 0xffffffffu)); }

}  // namespace

PostgresStore::Impl::Impl(std::string info, PostgresStoreConfig configuration)
    // A standby (and its reconnects) backs off up to a second while the
    // server is away.
    : PipelineStore(PipelineConfig{configuration.leader_lease, configuration.keep_finished, std::chrono::seconds(1)}),
      conninfo(std::move(info)),
      config(std::move(configuration)),
      holder(make_holder_name()) {}

PostgresStore::Impl::~Impl() { stop(); }

std::optional<std::uint64_t> PostgresStore::Impl::try_take_over(nanoseconds&) {
    if (!writer || !writer->alive()) {
        writer.reset();
        writer = std::make_unique<Connection>(conninfo, nanoseconds(0));
    }
    if (shard_name_.empty()) {
        shard_name_ = shard();
        shard_lock_ = names->lock_key_for(shard_name_);
    }
    Result locked = writer->exec("SELECT pg_try_advisory_lock($1::bigint)", {Param(shard_lock_)});
    if (locked.boolean(0, 0)) {
        // The session that led is gone (released, terminated or dropped):
        // whatever it had not committed never will be. A new epoch fences
        // anything that still believes it leads.
        writer->exec("BEGIN");
        Result taken;
        rolling_back(*writer, [&] {
            ensure_leader_row(*writer, *names, shard_name_);
            taken = writer->exec("UPDATE " + names->leader +
                                     " SET epoch = epoch + 1, holder = $1, backend_pid = pg_backend_pid(), "
                                     "expires_at = " + lease_expiry(2) + " WHERE shard = $3 RETURNING epoch",
                                 {Param(holder), lease_param(config.leader_lease), Param(shard_name_)});
            writer->exec("COMMIT");
        });
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
            names->leader + " WHERE shard = $3",
        {high_half(shard_lock_), low_half(shard_lock_), Param(shard_name_)});
    if (holder_row.rows() == 1 && holder_row.boolean(0, 0) && !holder_row.is_null(0, 1))
        writer->exec("SELECT pg_terminate_backend($1::integer)", {Param(holder_row.int64(0, 1))});
    return std::nullopt;
}

Recovered PostgresStore::Impl::recover(std::uint64_t epoch, WallTime terminal_since) {
    try {
        listener = std::make_unique<Connection>(conninfo, nanoseconds(0));
        listener->exec("LISTEN cronoq_inbox");
    } catch (const StoreError&) {
        listener.reset();  // made again at the first look at the inbox, which then reads it
    }
    next_inbox_poll_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    try {
        const auto check_epoch = [&] {
            Result row = writer->exec("SELECT epoch FROM " + names->leader + " WHERE shard = $1 FOR UPDATE",
                                      {Param(shard_name_)});
            if (row.rows() != 1 || static_cast<std::uint64_t>(row.int64(0, 0)) != epoch)
                throw StoreError(StoreErrorKind::Fenced, "fenced: another process took leadership over during recovery");
        };
        Recovered recovered;
        // The shard's pools first, committed, so that the load reads the
        // tasks of the pools it claimed (docs/store.md, "Shards").
        writer->exec("BEGIN");
        rolling_back(*writer, [&] {
            check_epoch();
            recovered.pool_conflict = claim_pools(*writer, *names, shard_name_, shard_pools());
            writer->exec(recovered.pool_conflict.empty() ? "COMMIT" : "ROLLBACK");
        });
        if (!recovered.pool_conflict.empty()) return recovered;
        writer->exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
        rolling_back(*writer, [&] {
            check_epoch();
            recovered = load(*writer, *names, shard_name_, terminal_since);
            writer->exec("UPDATE " + names->leader + " SET expires_at = " + lease_expiry(1) + " WHERE shard = $2",
                         {lease_param(config.leader_lease), Param(shard_name_)});
            writer->exec("COMMIT");
        });
        return recovered;
    } catch (const StoreError& error) {
        // Without its session this process holds the lock no more.
        if (error.kind() != StoreErrorKind::Fenced && !writer->alive())
            throw StoreError(StoreErrorKind::Fenced, error.what());
        throw;
    }
}

bool PostgresStore::Impl::inbox_signalled() {
    const auto now = std::chrono::steady_clock::now();
    bool due = false;
    if (listener && listener->alive()) {
        // A read of what the socket holds, without waiting: cheap enough
        // every millisecond. Notifications of other schemas are dropped. A
        // lost connection throws here and is made again below next time.
        due = listener->take_notifications("cronoq_inbox", names->schema) > 0;
    } else {
        listener.reset();
        // Made again at the safety net's pace, so that a server that is
        // away is not dialled every millisecond; whatever was notified
        // while it was away is read at once.
        if (now < next_inbox_poll_) return false;
        next_inbox_poll_ = now + std::chrono::seconds(1);
        auto made = std::make_unique<Connection>(conninfo, nanoseconds(0));
        made->exec("LISTEN cronoq_inbox");
        listener = std::move(made);
        due = true;
    }
    if (!due && now < next_inbox_poll_) return false;
    next_inbox_poll_ = now + std::chrono::seconds(1);
    return listener->exec("SELECT EXISTS (SELECT 1 FROM " + names->inbox + ")").boolean(0, 0);
}

namespace {

/// Whether a commit of these batches ends a task: clients' watches are
/// then notified (cronoq_ends).
bool ends_tasks(const std::vector<const Batch*>& batches) {
    for (const Batch* batch : batches)
        for (const Change& change : batch->changes) {
            if (const auto* t = std::get_if<TaskTransition>(&change); t && is_terminal(t->status)) return true;
            if (const auto* i = std::get_if<TaskInserted>(&change); i && is_terminal(i->row.status)) return true;
        }
    return false;
}

}  // namespace

std::size_t PostgresStore::Impl::commit(const Transaction& t) {
    const Names& n = *names;
    if (check_sql_.empty()) {
        check_sql_ = "SELECT epoch, holder FROM " + n.leader + " WHERE shard = $1 FOR UPDATE";
        renew_sql_ = "UPDATE " + n.leader + " SET expires_at = " + lease_expiry(1) + " WHERE shard = $2";
        give_up_sql_ = "UPDATE " + n.leader + " SET holder = NULL, backend_pid = NULL, expires_at = " + lease_expiry(1) +
                       " WHERE shard = $2";
    }
    const Param lease = lease_param(config.leader_lease);
    const Param shard(shard_name_);
    try {
        // One pipelined transaction: the epoch check (a row lock on the
        // lease), the renewal, every change in order, then COMMIT only if
        // the epoch is still this one's.
        std::size_t changes = 0;
        for (const Batch* batch : t.batches) changes += batch->changes.size();
        std::vector<Query> queries;
        queries.reserve(changes + 5);
        queries.push_back(Query{"BEGIN", {}});
        queries.push_back(Query{check_sql_, {shard}});
        queries.push_back(Query{renew_sql_, {lease, shard}});
        ChangeStatements statements(n, queries, shard_name_);
        for (const Batch* batch : t.batches)
            for (const Change& change : batch->changes) statements.add(change);
        statements.finish();
        // Delivered at COMMIT, to every watch of the schema's clients.
        if (ends_tasks(t.batches)) queries.push_back(Query{"SELECT pg_notify('cronoq_ends', $1)", {Param(n.schema)}});
        if (t.prune_before)
            queries.push_back(Query{prune_sql(n), {Param(to_stored(*t.prune_before)),
                                                   Param(static_cast<std::int64_t>(t.prune_limit))}});
        if (t.give_up) queries.push_back(Query{give_up_sql_, {lease, shard}});
        std::vector<Result> results;
        try {
            results = writer->pipeline(queries);
        } catch (const StoreError&) {
            if (writer->alive()) writer->exec("ROLLBACK");
            throw;
        }
        const auto current = static_cast<std::uint64_t>(results[1].int64(0, 0));
        if (current != t.epoch) {
            const std::string by = results[1].optional_text(0, 1).value_or("none");
            writer->exec("ROLLBACK");
            std::string what = "fenced: another process (" + by;
            what += ") took leadership of shard \"" + shard_name_ + "\" of the PostgreSQL schema " + n.schema;
            what += " over in epoch " + std::to_string(current);
            what += "; this process led epoch " + std::to_string(t.epoch);
            throw StoreError(StoreErrorKind::Fenced, what);
        }
        std::size_t pruned = 0;
        if (t.prune_before) pruned = static_cast<std::size_t>(results[results.size() - (t.give_up ? 2 : 1)].affected());
        writer->exec("COMMIT");
        if (t.give_up) {
            // The lease row is released already; the session's end frees
            // the lock too, so a failed unlock changes nothing.
            try {
                writer->exec("SELECT pg_advisory_unlock($1::bigint)", {Param(shard_lock_)});
            } catch (const StoreError&) {
            }
        }
        return pruned;
    } catch (const StoreError& error) {
        if (error.kind() == StoreErrorKind::Fenced || (writer && writer->alive())) throw;
        // The session and with it the advisory lock are gone: a standby
        // may lead already. Never reconnect to lead.
        std::string what = "fenced: the connection to the PostgreSQL server was lost, and with it the "
                           "leader's lock on schema " + n.schema;
        what += ": ";
        what += error.what();
        throw StoreError(StoreErrorKind::Fenced, what);
    }
}

}  // namespace cronoq
