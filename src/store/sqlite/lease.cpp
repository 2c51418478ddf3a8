#include "lease.hpp"

#include "../holder_identity.hpp"
#include "../stored_values.hpp"

#include <limits>

namespace cronoq::store::sqlite {

namespace {

std::int64_t expiry(WallTime now, std::chrono::nanoseconds lease) {
    const std::int64_t stored = to_stored(now);
    // Saturated: a lease of nanoseconds::max() means "until released".
    return lease.count() > std::numeric_limits<std::int64_t>::max() - stored ? std::numeric_limits<std::int64_t>::max()
                                                                             : stored + lease.count();
}

}  // namespace

LeaderRow read_leader(Connection& connection) {
    Statement statement(connection, "SELECT epoch, holder, expires_at FROM leader WHERE id = 1");
    if (!statement.step())
        throw StoreError(StoreErrorKind::Corrupt, "the store " + connection.path().string() + " has no leader row");
    return LeaderRow{static_cast<std::uint64_t>(statement.int64(0)), statement.optional_text(1),
                     from_stored(statement.int64(2))};
}

bool takeable(const LeaderRow& row, WallTime now) {
    return !row.holder || row.expires_at <= now || holder_has_ended(*row.holder);
}

std::optional<std::uint64_t> try_take(Connection& connection, const std::string& holder, WallTime now,
                                      std::chrono::nanoseconds lease) {
    WriteTransaction transaction(connection);
    const LeaderRow row = read_leader(connection);
    if (!takeable(row, now)) return std::nullopt;
    const std::uint64_t epoch = row.epoch + 1;
    Statement update(connection, "UPDATE leader SET epoch = ?1, holder = ?2, expires_at = ?3 WHERE id = 1");
    update.bind(1, static_cast<std::int64_t>(epoch)).bind(2, holder).bind(3, expiry(now, lease)).run();
    transaction.commit();
    return epoch;
}

void check_and_renew(Connection& connection, std::uint64_t epoch, WallTime now, std::chrono::nanoseconds lease) {
    const LeaderRow row = read_leader(connection);
    if (row.epoch != epoch)
        throw StoreError(StoreErrorKind::Fenced,
                         "fenced: another process (" + row.holder.value_or("none") + ") took leadership of " +
                             connection.path().string() + " over in epoch " + std::to_string(row.epoch) +
                             "; this process led epoch " + std::to_string(epoch));
    Statement update(connection, "UPDATE leader SET expires_at = ?1 WHERE id = 1");
    update.bind(1, expiry(now, lease)).run();
}

bool apply_unless_led(Connection& connection, const Change& change, WallTime now) {
    WriteTransaction transaction(connection);
    if (!takeable(read_leader(connection), now)) return false;
    ChangeWriter(connection).apply(change);
    // A pool's pauses and resumes that clients committed earlier are
    // older than this word: the next leader must not apply them after it
    // (docs/store.md, "Paused pools").
    if (const auto* paused = std::get_if<PoolPaused>(&change)) {
        Statement superseded(connection, "DELETE FROM inbox WHERE op IN (?1, ?2)");
        superseded.bind(1, inbox_op_text(InboxEntry::Op::Pause, paused->pool));
        superseded.bind(2, inbox_op_text(InboxEntry::Op::Resume, paused->pool)).run();
    }
    transaction.commit();
    return true;
}

void give_up(Connection& connection) { connection.exec("UPDATE leader SET holder = NULL, expires_at = 0 WHERE id = 1"); }

}  // namespace cronoq::store::sqlite
