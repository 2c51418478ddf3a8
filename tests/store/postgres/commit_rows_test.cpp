// PostgreSQL only: a commit's rows stream from its array parameters into
// the table; the server never holds them aside in a temporary file
// (docs/postgres.md, "Writing a commit"). The session here may not write a
// single byte of temporary file (temp_file_limit = 0) and has a work_mem of
// 64 kB, far below the commit's rows: a statement that materialised them
// would fail, and with it the commit.
#include "pg_support.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::commit_rows_test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t rows = 3000;

TEST(PgCommitRows, ALargeCommitNeedsNoTemporaryFileOnTheServer) {
    ASSERT_FALSE(pg_conninfo().empty()) << "CRONOQ_TEST_PG is not set: run through ctest (label postgres)";
    PgSchema schema;
    const std::string tasks = "\"" + schema.name() + "\".tasks";
    const std::string conninfo = pg_conninfo() + " options='-c work_mem=64 -c temp_file_limit=0'";
    Reports reports;  // outlives the store, whose destructor reports
    auto store = PostgresStore::connect(conninfo, schema.config(10s));
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());

    // One commit inserting every row (the INSERT), then one moving every
    // row on (the UPDATE), each a statement over arrays of `rows` values.
    store::Batch inserts;
    for (std::uint64_t id = 1; id <= rows; ++id) inserts.changes.push_back(store::TaskInserted{task_row(id)});
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(std::move(inserts))))
        << (reports.lost ? reports.lost->message : "not committed");
    store::Batch ends;
    for (std::uint64_t id = 1; id <= rows; ++id) {
        store::TaskTransition end;
        end.id = TaskId{id};
        end.status = TaskStatus::Succeeded;
        end.attempt = 1;
        end.updated_at = std::chrono::system_clock::now();
        end.output = "output-" + std::to_string(id);
        ends.changes.push_back(std::move(end));
    }
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(std::move(ends))))
        << (reports.lost ? reports.lost->message : "not committed");

    RawPg raw;
    EXPECT_EQ(raw.number("SELECT count(*) FROM " + tasks + " WHERE status = 'succeeded' AND output = ('output-' || id)::bytea"),
              static_cast<std::int64_t>(rows));
}

}  // namespace
}  // namespace cronoq::test::commit_rows_test
