#pragma once
// The conformance suite's view of a backend: a fresh place for stores per
// test (a file in a scratch folder, a schema on the test server), opened
// with the options the tests vary, plus the few raw reads and one raw
// write a test needs outside the store. The suite (conformance/*.cpp) is
// instantiated once per backend: in test_store for SQLite, in
// test_store_postgres for PostgreSQL.
#include "store_support.hpp"

#include <cronoq/store/store.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace cronoq::test {

/// What the tests vary when they open a store.
struct StoreOptions {
    std::chrono::nanoseconds lease = std::chrono::seconds(10);
    /// Long by default, so that the background prune leaves a test's rows
    /// alone unless the test asks for it.
    std::chrono::nanoseconds keep_finished = std::chrono::hours(100000);
};

/// One place stores live in, removed when the site goes.
class StoreSite {
public:
    virtual ~StoreSite() = default;
    /// A store on this site; every call opens another (a standby, a reader).
    virtual std::shared_ptr<Store> open(const StoreOptions& options = {}) = 0;
    /// The arguments that name this site to a child process in mode
    /// `leader` (child_modes: `file=...`, `schema=...`).
    virtual std::vector<std::string> child_args() const = 0;

    // Raw reads and writes, past the store.
    virtual std::int64_t count_tasks() = 0;
    virtual std::int64_t max_task_id() = 0;  ///< 0 without rows
    virtual std::int64_t leader_epoch() = 0;
    virtual std::int64_t next_task_id_mark() = 0;
    /// Lease rows that name a holder whose lease has not run out.
    virtual std::int64_t live_leases() = 0;
    /// How long the current lease has left.
    virtual std::chrono::nanoseconds lease_left() = 0;
    /// As if another process had taken leadership over: the epoch moves on.
    virtual void bump_epoch() = 0;
};

struct Backend {
    std::string name;
    /// A fresh site, or null after reporting why none can be made.
    std::function<std::unique_ptr<StoreSite>()> make_site;
    /// What the backend's error says when a task id is inserted twice.
    std::string duplicate_id_message;
};

inline void PrintTo(const Backend& backend, std::ostream* out) { *out << backend.name; }

/// For INSTANTIATE_TEST_SUITE_P: tests are named after their backend.
inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) { return info.param.name; }

/// The fixture of every conformance test: a site of the backend under test.
class StoreTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        site_ = GetParam().make_site();
        ASSERT_TRUE(site_) << "no " << GetParam().name << " site for this test";
    }
    StoreSite& site() { return *site_; }

private:
    std::unique_ptr<StoreSite> site_;
};

// The suites, each a name for the same fixture (conformance/*_conformance.cpp).
using Journal = StoreTest;
using Leadership = StoreTest;
using Processes = StoreTest;
using Query = StoreTest;
using Clients = StoreTest;
using Shards = StoreTest;

/// A leader process killed at a random point: a backend and a seed.
class CrashTest : public ::testing::TestWithParam<std::tuple<Backend, unsigned>> {
protected:
    void SetUp() override;
    std::unique_ptr<StoreSite> site_;
};
std::string crash_test_name(const ::testing::TestParamInfo<CrashTest::ParamType>& info);

/// Instantiates the whole conformance suite for `backend` (a Backend), once
/// per test binary: tests named `Conformance/<suite>.<test>/<backend>`.
#define CRONOQ_STORE_CONFORMANCE(backend)                                                                         \
    INSTANTIATE_TEST_SUITE_P(Conformance, Journal, ::testing::Values(backend), backend_name);                     \
    INSTANTIATE_TEST_SUITE_P(Conformance, Leadership, ::testing::Values(backend), backend_name);                  \
    INSTANTIATE_TEST_SUITE_P(Conformance, Processes, ::testing::Values(backend), backend_name);                   \
    INSTANTIATE_TEST_SUITE_P(Conformance, Query, ::testing::Values(backend), backend_name);                       \
    INSTANTIATE_TEST_SUITE_P(Conformance, Clients, ::testing::Values(backend), backend_name);                     \
    INSTANTIATE_TEST_SUITE_P(Conformance, Shards, ::testing::Values(backend), backend_name);                      \
    INSTANTIATE_TEST_SUITE_P(Conformance, CrashTest,                                                              \
                             ::testing::Combine(::testing::Values(backend), ::testing::Values(1u, 2u, 3u, 4u, 5u)), \
                             crash_test_name)

/// A store leading on a site, with its reports.
struct Leader {
    explicit Leader(StoreSite& site, const StoreOptions& options = {},
                    std::chrono::nanoseconds retention = std::chrono::hours(1));
    /// Enqueues `batch` and waits for its commit.
    store::Sequence commit(store::Batch batch);

    Reports reports;  // outlives the store, whose destruction reports to it
    std::shared_ptr<Store> store;
};

/// What a fresh leader on the site recovers (the previous one released).
store::Recovered recover(StoreSite& site, std::chrono::nanoseconds retention = std::chrono::hours(1));

/// The recovered row of task `id`, or null.
const store::TaskRow* find_row(const store::Recovered& recovered, std::uint64_t id);

/// Every row the store holds, whatever its status, by id.
std::vector<StoredTask> all_tasks(const Store& store);

/// Every id in [from, to) is stored with `tag`'s payload ("<tag>-<id>",
/// then padding dots), and the stored ids form one run from 1 (batches
/// commit in order, whole or not at all).
void expect_acknowledged(StoreSite& site, std::uint64_t from, std::uint64_t to, const std::string& tag);

}  // namespace cronoq::test
