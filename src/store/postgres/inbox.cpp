// Reading the clients' tables (docs/postgres.md, "Clients"): the inbox a
// leader takes submissions and cancels from, and the shards' configurations.
#include "store_impl.hpp"

#include "../shard_ranges.hpp"

namespace cronoq::store::postgres {

std::vector<InboxEntry> read_inbox(Connection& c, const Names& n, const std::string& shard, std::size_t limit) {
    // The task's columns first, as read_row reads them; the entry's after.
    // An entry is the shard's when its pool is (a cancel's: its task's;
    // a pause's or resume's: the one it names).
    std::string sql = "SELECT " + qualified_columns(task_columns, "t");
    sql += ", i.seq, i.op, i.task_id FROM " + n.inbox;
    sql += " i LEFT JOIN " + n.tasks;
    sql += " t ON t.id = i.task_id WHERE " + owned_pool_sql(inbox_entry_pool_sql(), "$2::text", n.shard_pools);
    sql += " ORDER BY i.seq LIMIT $1";
    Result r = c.exec(sql, {Param(to_int64(limit)), Param(shard)});
    std::vector<InboxEntry> out;
    out.reserve(static_cast<std::size_t>(r.rows()));
    for (int i = 0; i < r.rows(); ++i) {
        InboxEntry entry;
        entry.seq = static_cast<std::uint64_t>(r.int64(i, 14));
        const std::string op = r.text(i, 15);
        if (!read_inbox_op(op, entry)) {
            std::string what = "inbox entry " + std::to_string(entry.seq);
            what += " in the PostgreSQL schema " + n.schema;
            what += " has an unknown op \"" + op;
            what += '"';
            throw StoreError(StoreErrorKind::Corrupt, what);
        }
        entry.task = TaskId{static_cast<std::uint64_t>(r.int64(i, 16))};
        if (entry.op == InboxEntry::Op::Submit && !r.is_null(i, 0)) entry.row = read_row(r, i, n);
        out.push_back(std::move(entry));
    }
    return out;
}

std::vector<ShardConfig> read_configs(Connection& c, const Names& n) {
    Result r = c.exec("SELECT shard, body, written_at, retention FROM " + n.shard_config + " ORDER BY shard");
    std::vector<ShardConfig> out;
    for (int i = 0; i < r.rows(); ++i)
        out.push_back(ShardConfig{r.text(i, 0), r.text(i, 1), from_stored(r.int64(i, 2)),
                                  std::chrono::nanoseconds(r.int64(i, 3))});
    return out;
}

}  // namespace cronoq::store::postgres
