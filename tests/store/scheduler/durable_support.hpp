#pragma once
// Helpers for the tests of a scheduler with a store: the scheduler type,
// the store backends a test runs on, stores with a short lead, the
// standby and the child processes' modes.
#include "store_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cronoq::test {

using Durable = BlockingScheduler<std::string, std::string>;

/// A short lead, so that a process taking over after a SIGKILL waits
/// little; `Durability::Full`, as by default.
inline constexpr std::chrono::milliseconds test_lease{600};

inline std::shared_ptr<SqliteStore> open_store(const std::filesystem::path& file) {
    return SqliteStore::open(file, SqliteStoreConfig{Durability::Full, test_lease, std::chrono::hours(24)});
}

// ---- the backends -------------------------------------------------------------

/// The store backends the scheduler tests are written against. The same
/// sources build test_durable (SQLite) and, with CRONOQ_TEST_POSTGRES,
/// test_durable_postgres (a schema on the ctest fixture's PostgreSQL
/// server, CRONOQ_TEST_PG): `tested_backends()` says which.
enum class Backend { Sqlite, Postgres };
std::vector<Backend> tested_backends();
/// Those of them that are SQLite: none in the PostgreSQL binary, for a test
/// of SQLite's own behaviour (its suite allows being left uninstantiated).
std::vector<Backend> sqlite_backends();
std::string backend_name(Backend backend);
/// How gtest prints a parameter.
inline void PrintTo(Backend backend, std::ostream* out) { *out << backend_name(backend); }
/// Test-name suffixes: "Sqlite", "Postgres".
struct BackendName {
    std::string operator()(const ::testing::TestParamInfo<Backend>& info) const { return backend_name(info.param); }
};
/// For a backend combined with a seed: "Sqlite_3".
struct BackendSeedName {
    std::string operator()(const ::testing::TestParamInfo<std::tuple<Backend, unsigned>>& info) const {
        return backend_name(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param));
    }
};

/// Opens the store at `location` ("sqlite:<file>" or "postgres:<schema>"),
/// with `test_lease`: what a child process gets on its command line.
std::shared_ptr<Store> open_location(const std::string& location);

class PgSchema;

/// A fresh store of one backend for one test, removed at its end (the
/// SQLite file with its folder, the PostgreSQL schema), and a folder for
/// the test's other files.
class TestStore {
public:
    explicit TestStore(Backend backend);
    ~TestStore();
    TestStore(const TestStore&) = delete;
    TestStore& operator=(const TestStore&) = delete;

    Backend backend() const { return backend_; }
    const std::string& location() const { return location_; }
    const ScratchDir& dir() const { return dir_; }
    std::shared_ptr<Store> open() const { return open_location(location_); }
    /// Every task row, counted in one statement: a leader may move rows
    /// between statuses while a list per status would be read.
    std::int64_t count_tasks() const;

private:
    Backend backend_;
    ScratchDir dir_;
    std::unique_ptr<PgSchema> schema_;
    std::string location_;
};

/// Every task row the store holds: id -> (status, attempt, updated_at).
std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>> task_rows(const std::string& location);

// ---- processes ----------------------------------------------------------------

/// Pool "p" of `workers` slots whose attempts answer "<payload>!" once
/// `gate` is ready (waited for on the blocking pool): a leader that took
/// over changes nothing of what it recovered until the test opens it.
Pool<std::string, std::string> gated_pool(std::shared_future<void> gate, std::size_t workers);

/// A pool named `name` whose attempts return their payload.
Pool<std::string, std::string> identity_pool(std::string name);

/// What a `lead` child acknowledged, from its lines ("A <id> <key>"), and
/// its last line ("X ...") once a submission failed.
struct Acks {
    std::map<std::uint64_t, std::string> by_id;  // id -> key
    std::optional<std::string> stop;

    void note(const std::string& line);
    /// Reads lines until at least `at_least` tasks were acknowledged.
    void read(Child& child, std::size_t at_least);
};

/// The end of a takeover while the old leader still ran: the old leader
/// (`leader`, a `lead` child) finds itself fenced at its next commit and
/// exits 3 saying it no longer leads; the store's rows are still
/// `at_takeover` (it wrote nothing after the takeover); then, with the
/// new leader's `gate` opened, every task the old leader acknowledged
/// ends with its payload and "!" on `sched`, which then shuts down.
void expect_fenced_and_nothing_lost(Child& leader, Acks& acks, const std::string& location,
                                    const std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>>& at_takeover,
                                    std::promise<void>& gate, Durable& sched);

/// The standby: the test process waiting in open() on a thread of its own.
struct Standby {
    std::optional<Durable> sched;
    std::promise<void> opened;
    std::future<void> led = opened.get_future();
    std::thread thread;

    Standby(const std::string& location, Pool<std::string, std::string> pool);
    ~Standby();
    Standby(const Standby&) = delete;
    Standby& operator=(const Standby&) = delete;
};

/// `--child lead <location> <pace ms>` (standby_test.cpp).
int lead_child_main(int argc, char** argv);
/// `--child random <location> <seed>` (recovery_invariant_test.cpp).
int random_child_main(int argc, char** argv);
/// `--child recurring <location>` (recurring_failover_test.cpp).
int recurring_child_main(int argc, char** argv);
/// `--child client-submit ...` and `--child client-leader ...`
/// (client/client_support.hpp).
int client_submit_child_main(int argc, char** argv);
int client_leader_child_main(int argc, char** argv);
int shard_leader_child_main(int argc, char** argv);
/// `--child ingest-cancel ...` (client_ingestion_test.cpp).
int ingest_cancel_child_main(int argc, char** argv);
/// `--child ingest-leader ...` (client_ingestion_crash_test.cpp).
int ingest_leader_child_main(int argc, char** argv);

}  // namespace cronoq::test
