// SQLite only: a full disk (a file-size limit on a child process) fails
// commits as I/O errors; the leader stops and keeps what was acknowledged.
#include "conformance/leader_process.hpp"
#include "sqlite_site.hpp"

#include <gtest/gtest.h>

#include <iostream>

namespace cronoq::test::full_disk_test {
namespace {

using namespace std::chrono_literals;

TEST(FullDisk, CommitsFailWithAnIoErrorThenTheLeaderStopsAndKeepsWhatWasAcknowledged) {
    SqliteSite site;
    // Created first, so that the child's file-size limit leaves room for
    // some commits only.
    site.open();
    LeaderProcess leader(site.child_args(), "A", 300ms, {"payload=1000", "fsize=2097152"});
    ASSERT_TRUE(leader.until("X ")) << "the leader never stopped";
    EXPECT_EQ(leader.lost->rfind("X failed", 0), 0u) << *leader.lost;
    EXPECT_EQ(leader.child.wait(), 4);
    ASSERT_FALSE(leader.errors.empty());
    EXPECT_EQ(leader.errors.front().rfind("E io ", 0), 0u) << leader.errors.front();
    std::cout << leader.acked << " batches acknowledged; first error: " << leader.errors.front() << "\n";
    EXPECT_GT(leader.acked, 0u);
    expect_acknowledged(site, leader.first, leader.end(), "A");
}

}  // namespace
}  // namespace cronoq::test::full_disk_test
