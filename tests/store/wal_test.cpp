// SQLite only: checkpoints keep the write-ahead log bounded.
#include "sqlite_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::wal_test {
namespace {

using namespace std::chrono_literals;

TEST(SqliteJournal, TheWalStaysBounded) {
    SqliteSite site;
    Reports reports;
    auto store = SqliteStore::open(site.file(), SqliteStoreConfig{Durability::Normal, 10s, 24h});
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    store::Sequence last = 0;
    for (std::uint64_t id = 1; id <= 6000; ++id) {
        store::TaskRow row = task_row(id);
        row.payload.resize(4096, 'x');
        last = store->journal().enqueue(store::Batch{{store::TaskInserted{row}}});
        if (id % 200 == 0) {
            ASSERT_TRUE(reports.wait_committed(last));
        }
    }
    ASSERT_TRUE(reports.wait_committed(last));
    ASSERT_TRUE(reports.wait_committed(store->journal().enqueue(insert_batch(6001))));
    // About 25 MB went through; checkpoints keep the WAL near its limit.
    EXPECT_LT(std::filesystem::file_size(site.file().string() + "-wal"), 16u << 20);
    EXPECT_GT(std::filesystem::file_size(site.file()), 20u << 20);
}

}  // namespace
}  // namespace cronoq::test::wal_test
