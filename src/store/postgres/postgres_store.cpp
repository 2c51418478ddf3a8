// PostgresStore: connecting, creating the schema, and the inspection members.
#include "store_impl.hpp"

#include <cronoq/config_error.hpp>

namespace cronoq {

using namespace store::postgres;

namespace {

/// PostgreSQL truncates a longer identifier (NAMEDATALEN - 1 bytes, 63 by
/// default), so two names that differ only past it would be one schema
/// while their advisory locks, derived from the whole names, differ: both
/// would lead (docs/postgres.md, "Roles and grants").
void check_schema_length(Connection& connection, const std::string& schema) {
    const std::size_t limit = std::stoul(connection.exec("SHOW max_identifier_length").text(0, 0));
    if (schema.size() <= limit) return;
    std::string what = "PostgresStoreConfig: schema must be at most " + std::to_string(limit) +
                       " bytes (the server's max_identifier_length), PostgreSQL would truncate it; it has " +
                       std::to_string(schema.size()) + ": \"";
    what += schema.substr(0, limit);
    what += "...\"";
    throw ConfigError(what);
}

}  // namespace

std::shared_ptr<PostgresStore> PostgresStore::connect(std::string conninfo, PostgresStoreConfig config) {
    if (config.leader_lease <= std::chrono::nanoseconds(0))
        throw ConfigError("PostgresStoreConfig: leader_lease must be positive");
    if (config.keep_finished < std::chrono::nanoseconds(0))
        throw ConfigError("PostgresStoreConfig: keep_finished must not be negative");
    if (config.schema.empty()) throw ConfigError("PostgresStoreConfig: schema must not be empty");
    auto impl = std::make_unique<Impl>(std::move(conninfo), config);
    impl->inspection = std::make_unique<Connection>(impl->conninfo, config.connect_timeout);
    check_schema_length(*impl->inspection, config.schema);
    impl->names = std::make_unique<Names>(*impl->inspection, config.schema);
    migrate(*impl->inspection, *impl->names);
    impl->clients = std::make_unique<PostgresClientAccess>(impl->conninfo, *impl->names, config.connect_timeout);
    return std::shared_ptr<PostgresStore>(new PostgresStore(std::move(impl)));
}

PostgresStore::PostgresStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PostgresStore::~PostgresStore() = default;

Connection& PostgresStore::Impl::inspection_connection() const {
    // A connection the server dropped is replaced (one attempt per call).
    if (!inspection || !inspection->alive()) {
        inspection.reset();
        inspection = std::make_unique<Connection>(conninfo, std::chrono::nanoseconds(0));
    }
    return *inspection;
}

std::optional<store::TaskRow> PostgresStore::Impl::find_row(const TaskRef& task) const {
    return find_task(inspection_connection(), *names, task);
}

store::LeaseView PostgresStore::Impl::lease_row(const std::string& shard) const {
    // By the server's clock, and only while the leader's session lives: a
    // killed leader's session ends at once, and with it its lock.
    store::postgres::Result r = inspection_connection().exec(
        "SELECT epoch, COALESCE(holder IS NOT NULL AND expires_at > now() AND backend_pid IN (SELECT pid FROM "
        "pg_stat_activity), false) FROM " + names->leader + " WHERE shard = $1",
        {store::postgres::Param(shard)});
    if (r.rows() != 1) return {};
    return {static_cast<std::uint64_t>(r.int64(0, 0)), r.boolean(0, 1)};
}

store::ShardMap PostgresStore::Impl::shard_rows() const {
    return store::postgres::read_shard_map(inspection_connection(), *names);
}

std::vector<store::InboxEntry> PostgresStore::Impl::inbox_rows(const std::string& shard, std::size_t limit) const {
    return store::postgres::read_inbox(inspection_connection(), *names, shard, limit);
}

std::vector<store::TaskRow> PostgresStore::Impl::list_rows(TaskStatus status, std::size_t limit) const {
    return list_tasks(inspection_connection(), *names, status, limit);
}

std::vector<store::TaskRow> PostgresStore::Impl::query_rows(const store::TaskQueryPlan& plan) const {
    return query_tasks(inspection_connection(), *names, plan);
}

std::size_t PostgresStore::Impl::prune_rows(store::WallTime cutoff, std::size_t limit) {
    return prune_tasks(inspection_connection(), *names, cutoff, limit);
}

std::optional<StoredTask> PostgresStore::get_task(TaskRef task) const { return impl_->get_task(task); }

std::vector<StoredTask> PostgresStore::list(TaskStatus status, std::size_t limit) const {
    return impl_->list(status, limit);
}

TaskPage PostgresStore::query(const TaskQuery& query) const { return impl_->query(query); }

std::size_t PostgresStore::prune(std::chrono::nanoseconds older_than) { return impl_->prune(older_than); }

store::Journal& PostgresStore::journal() { return *impl_; }

store::ClientAccess& PostgresStore::client_access() { return *impl_->clients; }

const std::string& PostgresStore::schema() const { return impl_->config.schema; }

}  // namespace cronoq
