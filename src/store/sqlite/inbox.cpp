#include "inbox.hpp"

#include "../stored_values.hpp"
#include "rows.hpp"
#include "../shard_ranges.hpp"

#include <string>

namespace cronoq::store::sqlite {

std::vector<InboxEntry> read_inbox(Connection& connection, const std::string& shard, std::size_t limit) {
    // The task's columns first, as read_row reads them; the entry's after.
    // An entry is the shard's when its pool is (a cancel's: its task's;
    // a pause's or resume's: the one it names).
    std::string sql = "SELECT " + qualified_columns(task_columns, "t");
    sql += ", i.seq, i.op, i.task_id FROM inbox i LEFT JOIN tasks t ON t.id = i.task_id WHERE ";
    sql += owned_pool_sql(inbox_entry_pool_sql(), "?2", "shard_pools") + " ORDER BY i.seq LIMIT ?1";
    Statement statement(connection, sql.c_str());
    statement.bind(1, to_int64(limit)).bind(2, shard);
    std::vector<InboxEntry> out;
    while (statement.step()) {
        InboxEntry entry;
        entry.seq = static_cast<std::uint64_t>(statement.int64(14));
        const std::string op = statement.text(15);
        if (!read_inbox_op(op, entry))
            throw StoreError(StoreErrorKind::Corrupt, "inbox entry " + std::to_string(entry.seq) + " in " +
                                                          connection.path().string() + " has an unknown op \"" +
                                                          op + "\"");
        entry.task = TaskId{static_cast<std::uint64_t>(statement.int64(16))};
        if (entry.op == InboxEntry::Op::Submit && !statement.is_null(0)) entry.row = read_row(statement, connection);
        out.push_back(std::move(entry));
    }
    return out;
}

std::vector<ShardConfig> read_configs(Connection& connection) {
    Statement statement(connection, "SELECT shard, body, written_at, retention FROM shard_config ORDER BY shard");
    std::vector<ShardConfig> out;
    while (statement.step())
        out.push_back(ShardConfig{statement.text(0), statement.text(1), from_stored(statement.int64(2)),
                                  std::chrono::nanoseconds(statement.int64(3))});
    return out;
}

}  // namespace cronoq::store::sqlite
