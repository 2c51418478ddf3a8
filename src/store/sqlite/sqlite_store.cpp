// SqliteStore: opening the file and the inspection members.
#include "lease.hpp"
#include "inbox.hpp"
#include "rows.hpp"
#include "schema.hpp"
#include "store_impl.hpp"

#include <cronoq/config_error.hpp>

#include <sqlite3.h>

#include <algorithm>

namespace cronoq {

using namespace store::sqlite;

namespace {

std::chrono::milliseconds busy_wait(const SqliteStoreConfig& config) {
    return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(config.leader_lease),
                    std::chrono::milliseconds(1));
}

}  // namespace

std::shared_ptr<SqliteStore> SqliteStore::open(std::filesystem::path file, SqliteStoreConfig config) {
    if (config.leader_lease <= std::chrono::nanoseconds(0))
        throw ConfigError("SqliteStoreConfig: leader_lease must be positive");
    if (config.keep_finished < std::chrono::nanoseconds(0))
        throw ConfigError("SqliteStoreConfig: keep_finished must not be negative");
    auto impl = std::make_unique<Impl>(std::move(file), config);
    impl->writer = std::make_unique<Connection>(impl->path, Connection::Mode::Create, busy_wait(config));
    recognise(*impl->writer);
    configure_writer(*impl->writer, config.durability);
    migrate(*impl->writer);
    check_tables(*impl->writer);
    impl->inspection = std::make_unique<Connection>(impl->path, Connection::Mode::ReadWrite, busy_wait(config));
    impl->clients = std::make_unique<SqliteClientAccess>(impl->path, busy_wait(config));
    // A value near SQLITE_LIMIT_LENGTH would fail its commit (and, retried,
    // every commit after it): such a value is refused before it is written.
    const int limit = sqlite3_limit(impl->writer->get(), SQLITE_LIMIT_LENGTH, -1);
    impl->max_value_bytes_ = static_cast<std::size_t>(limit) - std::min<std::size_t>(static_cast<std::size_t>(limit) / 2, 1 << 20);
    return std::shared_ptr<SqliteStore>(new SqliteStore(std::move(impl)));
}

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SqliteStore::~SqliteStore() = default;

std::optional<store::TaskRow> SqliteStore::Impl::find_row(const TaskRef& task) const {
    return find_task(*inspection, task);
}

store::LeaseView SqliteStore::Impl::lease_row(const std::string& shard) const {
    ReadTransaction read(*inspection);
    const store::LeaderRow row = store::sqlite::read_leader(*inspection, shard);
    return {row.epoch, !store::sqlite::takeable(row, std::chrono::system_clock::now())};
}

store::ShardMap SqliteStore::Impl::shard_rows() const {
    ReadTransaction read(*inspection);
    return read_shard_map(*inspection);
}

std::vector<store::InboxEntry> SqliteStore::Impl::inbox_rows(const std::string& shard, std::size_t limit) const {
    ReadTransaction read(*inspection);
    return store::sqlite::read_inbox(*inspection, shard, limit);
}

std::vector<store::TaskRow> SqliteStore::Impl::list_rows(TaskStatus status, std::size_t limit) const {
    return list_tasks(*inspection, status, limit);
}

std::vector<store::TaskRow> SqliteStore::Impl::query_rows(const store::TaskQueryPlan& plan) const {
    return query_tasks(*inspection, plan);
}

std::size_t SqliteStore::Impl::prune_rows(store::WallTime cutoff, std::size_t limit) {
    return prune_tasks(*inspection, cutoff, limit);
}

std::optional<StoredTask> SqliteStore::get_task(TaskRef task) const { return impl_->get_task(task); }

std::vector<StoredTask> SqliteStore::list(TaskStatus status, std::size_t limit) const {
    return impl_->list(status, limit);
}

TaskPage SqliteStore::query(const TaskQuery& query) const { return impl_->query(query); }

std::size_t SqliteStore::prune(std::chrono::nanoseconds older_than) { return impl_->prune(older_than); }

store::Journal& SqliteStore::journal() { return *impl_; }

store::ClientAccess& SqliteStore::client_access() { return *impl_->clients; }

const std::filesystem::path& SqliteStore::path() const { return impl_->path; }

}  // namespace cronoq
