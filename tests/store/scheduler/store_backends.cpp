// The store backends the scheduler tests run on (durable_support.hpp):
// SQLite files in a scratch folder, and with CRONOQ_TEST_POSTGRES schemas
// on the test server that the ctest fixture started.
#include "durable_support.hpp"

#ifdef CRONOQ_TEST_POSTGRES
#include "postgres/pg_support.hpp"
#endif

#include <stdexcept>

namespace cronoq::test {

namespace {
constexpr std::string_view sqlite_prefix = "sqlite:";
[[maybe_unused]] constexpr std::string_view postgres_prefix = "postgres:";
}  // namespace

#ifdef CRONOQ_TEST_POSTGRES
std::vector<Backend> tested_backends() { return {Backend::Postgres}; }
#else
std::vector<Backend> tested_backends() { return {Backend::Sqlite}; }
// Only its destructor is needed, through TestStore's unique_ptr.
class PgSchema {};
#endif

std::vector<Backend> sqlite_backends() {
    std::vector<Backend> backends = tested_backends();
    std::erase(backends, Backend::Postgres);
    return backends;
}

std::string backend_name(Backend backend) { return backend == Backend::Sqlite ? "Sqlite" : "Postgres"; }

std::shared_ptr<Store> open_location(const std::string& location) {
    if (location.rfind(sqlite_prefix, 0) == 0) return open_store(location.substr(sqlite_prefix.size()));
#ifdef CRONOQ_TEST_POSTGRES
    if (location.rfind(postgres_prefix, 0) == 0) {
        PostgresStoreConfig config;
        config.schema = location.substr(postgres_prefix.size());
        config.leader_lease = test_lease;
        return PostgresStore::connect(pg_conninfo(), config);
    }
#endif
    throw std::invalid_argument("no store backend for the location " + location);
}

TestStore::TestStore(Backend backend) : backend_(backend) {
    if (backend == Backend::Sqlite) {
        location_ = std::string(sqlite_prefix) + dir_.file("s.db").string();
        return;
    }
#ifdef CRONOQ_TEST_POSTGRES
    if (pg_conninfo().empty())
        throw std::runtime_error("CRONOQ_TEST_PG is not set: run the PostgreSQL tests through ctest (label postgres)");
    schema_ = std::make_unique<PgSchema>();
    location_ = std::string(postgres_prefix) + schema_->name();
#else
    throw std::logic_error("this test binary is built without PostgreSQL");
#endif
}

TestStore::~TestStore() = default;

std::int64_t TestStore::count_tasks() const {
#ifdef CRONOQ_TEST_POSTGRES
    if (schema_) return RawPg().number("SELECT count(*) FROM \"" + schema_->name() + "\".tasks");
#endif
    return RawDb(location_.substr(sqlite_prefix.size())).query_int("SELECT count(*) FROM tasks");
}

std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>> task_rows(const std::string& location) {
    auto store = open_location(location);
    std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>> out;
    for (int s = 0; s <= static_cast<int>(TaskStatus::Shed); ++s)
        for (const StoredTask& t : store->list(static_cast<TaskStatus>(s), 1'000'000))
            out[t.id.value] = {t.status, t.attempt, t.updated_at.time_since_epoch().count()};
    return out;
}

}  // namespace cronoq::test
