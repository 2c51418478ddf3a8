// The PostgreSQL backend of the conformance suite: a schema of its own on
// the test server per test, read and tampered with through raw SQL; and
// its instantiation in test_store_postgres.
#include "conformance/store_site.hpp"
#include "pg_support.hpp"

namespace cronoq::test {

namespace {

class PgSite final : public StoreSite {
public:
    std::shared_ptr<Store> open(const StoreOptions& options) override {
        PostgresStoreConfig config = schema_.config(options.lease);
        config.keep_finished = options.keep_finished;
        return PostgresStore::connect(pg_conninfo(), config);
    }
    std::vector<std::string> child_args() const override { return {"schema=" + schema_.name()}; }
    std::int64_t count_tasks() override { return RawPg().number("SELECT count(*) FROM " + table("tasks")); }
    std::int64_t max_task_id() override {
        return RawPg().number("SELECT coalesce(max(id), 0) FROM " + table("tasks"));
    }
    std::int64_t leader_epoch() override { return RawPg().number("SELECT epoch FROM " + table("leader") + " WHERE shard = 'default'"); }
    std::int64_t next_task_id_mark() override {
        return RawPg().number("SELECT value FROM " + table("meta") + " WHERE name = 'next_task_id'");
    }
    std::int64_t live_leases() override {
        return RawPg().number("SELECT count(*) FROM " + table("leader") +
                              " WHERE holder IS NOT NULL AND backend_pid IS NOT NULL AND expires_at > now()");
    }
    std::chrono::nanoseconds lease_left() override {
        const auto micros = RawPg().number("SELECT (extract(epoch FROM expires_at - now()) * 1000000)::bigint FROM " +
                                           table("leader") + " WHERE shard = 'default'");
        return std::chrono::microseconds(micros);
    }
    void bump_epoch() override { RawPg().exec("UPDATE " + table("leader") + " SET epoch = epoch + 1 WHERE shard = 'default'"); }

private:
    std::string table(const std::string& name) const { return "\"" + schema_.name() + "\"." + name; }
    PgSchema schema_;
};

Backend postgres_backend() {
    return Backend{"postgres",
                   []() -> std::unique_ptr<StoreSite> {
                       if (pg_conninfo().empty()) {
                           ADD_FAILURE() << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
                           return nullptr;
                       }
                       return std::make_unique<PgSite>();
                   },
                   "duplicate key"};
}

}  // namespace

CRONOQ_STORE_CONFORMANCE(postgres_backend());

}  // namespace cronoq::test
