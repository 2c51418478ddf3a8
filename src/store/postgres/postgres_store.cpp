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

std::optional<store::TaskRow> PostgresStore::Impl::read_task(const TaskRef& task) const {
    std::lock_guard lock(inspection_mutex);
    return find_task(inspection_connection(), *names, task);
}

std::optional<StoredTask> PostgresStore::get_task(TaskRef task) const {
    auto row = impl_->read_task(task);
    if (!row) return std::nullopt;
    return store::to_stored_task(std::move(*row));
}

std::vector<StoredTask> PostgresStore::list(TaskStatus status, std::size_t limit) const {
    std::lock_guard lock(impl_->inspection_mutex);
    std::vector<StoredTask> out;
    for (auto& row : list_tasks(impl_->inspection_connection(), *impl_->names, status, limit))
        out.push_back(store::to_stored_task(std::move(row)));
    return out;
}

std::size_t PostgresStore::prune(std::chrono::nanoseconds older_than) {
    std::lock_guard lock(impl_->inspection_mutex);
    const auto cutoff = store::age_cutoff(std::chrono::system_clock::now(), older_than);
    constexpr std::size_t chunk = 1000;
    std::size_t total = 0;
    for (;;) {
        const std::size_t removed = prune_tasks(impl_->inspection_connection(), *impl_->names, cutoff, chunk);
        total += removed;
        if (removed < chunk) return total;
    }
}

store::Journal& PostgresStore::journal() { return *impl_; }

const std::string& PostgresStore::schema() const { return impl_->config.schema; }

}  // namespace cronoq
