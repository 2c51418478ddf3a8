// SQLite: a process that finds the lease held by a process of this host
// that has ended takes over at once, in a new epoch, instead of waiting for
// the lease to run out; a live holder keeps it (docs/store.md, "Leadership
// and fencing"). The children are this binary in mode `leader`. A restart
// after SIGKILL, on every backend: conformance/process_conformance.cpp.
#include "conformance/leader_process.hpp"
#include "holder_identity.hpp"
#include "sqlite_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

namespace cronoq::test::same_host_takeover_test {
namespace {

using namespace std::chrono_literals;
using std::chrono::system_clock;

/// Long enough that nothing in these tests could lead by the lease running out.
constexpr auto long_lease = 30s;

system_clock::time_point lease_expiry(const SqliteSite& site) {
    return system_clock::time_point(
        std::chrono::duration_cast<system_clock::duration>(std::chrono::nanoseconds(
            RawDb(site.file()).query_int("SELECT expires_at FROM leader"))));
}

/// How long a lease expiring at `expiry` has left now (negative once run out).
std::int64_t ms_left(system_clock::time_point expiry) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(expiry - system_clock::now()).count();
}

TEST(SameHostTakeover, ALiveHolderKeepsTheLeaseAndItsZombieLosesItAtOnce) {
    SqliteSite site;
    site.open();
    LeaderProcess a(site.child_args(), "A", long_lease);
    ASSERT_TRUE(a.until("L "));
    ASSERT_TRUE(a.until("C "));
    Reports standby_reports;
    auto standby = site.open(StoreOptions{long_lease});
    standby->journal().lead(standby_reports.handlers());
    // The standby looks every 100 ms: ten looks find the holder alive.
    EXPECT_FALSE(standby_reports.wait([](const Reports& r) { return r.recovered || r.lost; }, 1s))
        << "a live holder's lease was taken";
    EXPECT_EQ(site.leader_epoch(), static_cast<std::int64_t>(a.epoch));

    const auto expiry = lease_expiry(site);
    // Not reaped yet: the holder is a zombie, which never runs again.
    a.child.signal(SIGKILL);
    ASSERT_TRUE(standby_reports.wait_leading());
    EXPECT_GT(ms_left(expiry), 0) << "it led only once the killed leader's lease had run out";
    EXPECT_EQ(standby_reports.recovered->epoch, a.epoch + 1);
    EXPECT_EQ(a.child.wait(), 128 + SIGKILL);
}

TEST(SameHostTakeover, AHolderWhosePidRunsAnotherProcessLosesTheLease) {
    SqliteSite site;
    site.open();
    // This process's pid with another start time: the holder's pid was reused.
    store::HolderIdentity reused = store::HolderIdentity::current();
    ASSERT_NE(reused.process_start, "-");
    reused.process_start = "1" + reused.process_start;
    const auto far = std::chrono::duration_cast<std::chrono::nanoseconds>(
        (system_clock::now() + std::chrono::hours(1)).time_since_epoch());
    RawDb(site.file()).exec("UPDATE leader SET epoch = 7, holder = '" + reused.text() +
                            "', expires_at = " + std::to_string(far.count()));
    Reports reports;
    auto store = site.open(StoreOptions{long_lease});
    store->journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    EXPECT_EQ(reports.recovered->epoch, 8u);
}

TEST(SameHostTakeover, OnlyAHolderKnownToHaveEndedCounts) {
    const store::HolderIdentity self = store::HolderIdentity::current();
    const auto parsed = store::HolderIdentity::parse(self.text());
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->text(), self.text());
    EXPECT_FALSE(store::holder_has_ended(self.text())) << "this process runs";

    store::HolderIdentity other = self;
    other.boot_id = "another-boot";
    EXPECT_TRUE(store::holder_has_ended(other.text())) << "a process of an earlier boot of this host";
    other = self;
    other.host += "-elsewhere";
    other.boot_id = "another-boot";
    EXPECT_FALSE(store::holder_has_ended(other.text())) << "another host's process";
    other = self;
    other.pid_namespace = "1";
    other.process_start = "1";
    EXPECT_FALSE(store::holder_has_ended(other.text())) << "a pid of another pid namespace";
    // A holder written before the start time was recorded, or tampered with.
    EXPECT_FALSE(store::holder_has_ended("pid 2147483 on " + self.host + " #1"));
    EXPECT_FALSE(store::holder_has_ended("pid x on " + self.host + " #1 [start 1 boot " + self.boot_id + " pidns " +
                                         self.pid_namespace + "]"));
}

}  // namespace
}  // namespace cronoq::test::same_host_takeover_test
