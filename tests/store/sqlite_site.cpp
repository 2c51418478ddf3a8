// The SQLite backend of the conformance suite, and its instantiation in
// test_store.
#include "sqlite_site.hpp"

namespace cronoq::test {

namespace {

std::int64_t now_stored() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

SqliteSite::SqliteSite() : file_(dir_.file("s.db")) {}

std::shared_ptr<Store> SqliteSite::open(const StoreOptions& options) {
    return SqliteStore::open(file_, SqliteStoreConfig{Durability::Full, options.lease, options.keep_finished});
}

std::vector<std::string> SqliteSite::child_args() const { return {"file=" + file_.string()}; }

std::int64_t SqliteSite::count_tasks() { return RawDb(file_).query_int("SELECT count(*) FROM tasks"); }

std::int64_t SqliteSite::max_task_id() { return RawDb(file_).query_int("SELECT coalesce(max(id), 0) FROM tasks"); }

std::int64_t SqliteSite::leader_epoch() { return RawDb(file_).query_int("SELECT epoch FROM leader WHERE shard = 'default'"); }

std::int64_t SqliteSite::next_task_id_mark() {
    return RawDb(file_).query_int("SELECT value FROM meta WHERE name = 'next_task_id'");
}

std::int64_t SqliteSite::live_leases() {
    return RawDb(file_).query_int("SELECT count(*) FROM leader WHERE holder IS NOT NULL AND expires_at > " +
                                  std::to_string(now_stored()));
}

std::chrono::nanoseconds SqliteSite::lease_left() {
    return std::chrono::nanoseconds(RawDb(file_).query_int("SELECT expires_at FROM leader WHERE shard = 'default'") - now_stored());
}

void SqliteSite::bump_epoch() { RawDb(file_).exec("UPDATE leader SET epoch = epoch + 1 WHERE shard = 'default'"); }

Backend sqlite_backend() {
    return Backend{"sqlite", [] { return std::make_unique<SqliteSite>(); }, "UNIQUE constraint failed"};
}

CRONOQ_STORE_CONFORMANCE(sqlite_backend());

}  // namespace cronoq::test
