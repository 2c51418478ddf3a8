// Dependencies and batches in the engine (docs/guide/dependencies-and-keys.md): edges on success,
// failure and completion; skipping down the graph in one call; cycles;
// awaited keys; all-or-nothing batches.
#include "engine_harness.hpp"

namespace cronoq::core::test::dependency_test {
namespace {

using S = TaskStatus;
using K = Dep::Kind;

TaskSpec after(PoolId pool, Dep dep) {
    TaskSpec spec{.pool = pool};
    spec.depends_on.push_back(std::move(dep));
    return spec;
}

TaskSpec keyed(PoolId pool, std::string key) {
    TaskSpec spec{.pool = pool};
    spec.key = std::move(key);
    return spec;
}

Dep edge(K kind, TaskRef ref) { return Dep{kind, std::move(ref)}; }

enum class End { Success, Permanent, DeadLetter, Cancel };

// Brings the running `task` to the end `how` at `now`.
void end_task(Harness& h, TaskId task, End how, Time now) {
    switch (how) {
        case End::Success: h.complete(h.lease_of(task), Outcome::success(), now); break;
        case End::Permanent: h.complete(h.lease_of(task), Outcome::permanent("bad"), now); break;
        case End::DeadLetter: h.complete(h.lease_of(task), Outcome::retryable("flaky"), now); break;
        case End::Cancel: h.cancel(task, now); break;
    }
}

struct EdgeCase {
    K kind;
    End parent;
    bool released;
};

class EdgeTest : public ::testing::TestWithParam<EdgeCase> {};

// "OnFailureAfterPermanent": the test's name and its printed parameter,
// the same in every build (gtest's default prints the case's bytes,
// padding included).
std::string name_of(const EdgeCase& c) {
    const auto kind = [](K k) -> std::string {
        switch (k) {
            case K::OnSuccess: return "OnSuccess";
            case K::OnFailure: return "OnFailure";
            case K::OnComplete: return "OnComplete";
        }
        return "Kind" + std::to_string(static_cast<int>(k));
    };
    const auto end = [](End e) -> std::string {
        switch (e) {
            case End::Success: return "Success";
            case End::Permanent: return "Permanent";
            case End::DeadLetter: return "DeadLetter";
            case End::Cancel: return "Cancel";
        }
        return "End" + std::to_string(static_cast<int>(e));
    };
    return kind(c.kind) + "After" + end(c.parent);
}

void PrintTo(const EdgeCase& c, std::ostream* out) { *out << name_of(c) << (c.released ? " (released)" : " (skipped)"); }

std::string edge_case_name(const ::testing::TestParamInfo<EdgeCase>& info) { return name_of(info.param); }

// Every edge kind against every parent outcome, with the parent live when
// the dependent is submitted and with the parent already retained.
TEST_P(EdgeTest, ReleasedOrSkippedByTheParentsOutcome) {
    const EdgeCase c = GetParam();
    for (bool parent_ended_first : {false, true}) {
        Harness h;
        const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .retry = RetryPolicy::none()});
        const TaskId parent = h.submit(TaskSpec{.pool = pool}, t0);
        std::optional<TaskId> child;
        if (!parent_ended_first) {
            child = h.submit(after(pool, edge(c.kind, parent)), t0);
            EXPECT_EQ(h.engine.status(*child), S::Blocked);
        }
        end_task(h, parent, c.parent, t0 + 1s);
        if (parent_ended_first) child = h.submit(after(pool, edge(c.kind, parent)), t0 + 2s);
        const auto st = h.engine.status(*child);
        if (c.released) {
            EXPECT_TRUE(st == S::Running || st == S::Ready) << to_string(*st);
        } else {
            EXPECT_EQ(st, S::Skipped);
            EXPECT_NE(h.statuses_of(*child).back().message.find("dependency task"), std::string::npos);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllOutcomes, EdgeTest,
                         ::testing::Values(EdgeCase{K::OnSuccess, End::Success, true},
                                           EdgeCase{K::OnSuccess, End::Permanent, false},
                                           EdgeCase{K::OnSuccess, End::DeadLetter, false},
                                           EdgeCase{K::OnSuccess, End::Cancel, false},
                                           EdgeCase{K::OnFailure, End::Success, false},
                                           EdgeCase{K::OnFailure, End::Permanent, true},
                                           EdgeCase{K::OnFailure, End::DeadLetter, true},
                                           EdgeCase{K::OnFailure, End::Cancel, false},
                                           EdgeCase{K::OnComplete, End::Success, true},
                                           EdgeCase{K::OnComplete, End::Permanent, true},
                                           EdgeCase{K::OnComplete, End::DeadLetter, true},
                                           EdgeCase{K::OnComplete, End::Cancel, true}),
                         edge_case_name);

TEST(DependencyTest, BlockedUntilEveryEdgeIsMet) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 2});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(TaskSpec{.pool = pool}, t0);
    TaskSpec spec{.pool = pool};
    spec.depends_on = {Dep::on_success(a), Dep::on_complete(b)};
    const TaskId child = h.submit(spec, t0);
    EXPECT_EQ(h.engine.counters(pool).blocked, 1u);
    h.complete(h.lease_of(a), Outcome::success(), t0 + 1s);
    EXPECT_EQ(h.engine.status(child), S::Blocked);
    h.complete(h.lease_of(b), Outcome::success(), t0 + 2s);
    EXPECT_EQ(h.last_statuses_of(child), (std::vector<S>{S::Ready, S::Running}));
    EXPECT_EQ(h.engine.counters(pool).blocked, 0u);
}

TEST(DependencyTest, SkippingRunsDownAChainOfAThousandInOneCall) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId root = h.submit(TaskSpec{.pool = pool}, t0);
    std::vector<TaskId> chain{root};
    for (int i = 0; i < 1000; ++i) chain.push_back(h.submit(after(pool, Dep::on_success(chain.back())), t0));
    EXPECT_EQ(h.engine.counters(pool).blocked, 1000u);
    h.cancel(root, t0 + 1s);
    std::size_t skipped = 0;
    for (const Status& st : h.statuses()) skipped += st.status == S::Skipped ? 1 : 0;
    EXPECT_EQ(skipped, 1000u);
    EXPECT_EQ(h.engine.status(chain.back()), S::Skipped);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_EQ(h.engine.counters(pool).skipped, 1000u);
    EXPECT_EQ(h.engine.counters(pool).blocked, 0u);
}

TEST(DependencyTest, SuccessReleasesAChainOneLevelAtATime) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    const TaskId a = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId b = h.submit(after(pool, Dep::on_success(a)), t0);
    const TaskId c = h.submit(after(pool, Dep::on_success(b)), t0);
    h.complete(h.lease_of(a), Outcome::success(), t0 + 1s);
    EXPECT_EQ(h.only_dispatch().task, b);
    EXPECT_EQ(h.engine.status(c), S::Blocked);
    h.complete(h.lease_of(b), Outcome::success(), t0 + 2s);
    EXPECT_EQ(h.only_dispatch().task, c);
}

TEST(DependencyTest, CleanupOnFailureRunsAndTheHappyPathIsSkipped) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 4, .retry = RetryPolicy::none()});
    const TaskId fetch = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId load = h.submit(after(pool, Dep::on_success(fetch)), t0);
    const TaskId cleanup = h.submit(after(pool, Dep::on_failure(fetch)), t0);
    h.complete(h.lease_of(fetch), Outcome::permanent("source down"), t0 + 1s);
    EXPECT_EQ(h.engine.status(load), S::Skipped);
    EXPECT_EQ(h.engine.status(cleanup), S::Running);
}

TEST(DependencyTest, UnknownReferencesAreRejectedByDefault) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    auto by_key = h.try_submit(after(pool, Dep::on_success("nope")), t0);
    EXPECT_EQ(by_key.error(), SubmitError::UnknownDependency);
    EXPECT_NE(by_key.message().find("\"nope\""), std::string::npos);
    EXPECT_EQ(h.try_submit(after(pool, Dep::on_success(TaskId{999999999})), t0).error(), SubmitError::UnknownDependency);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(DependencyTest, AnAwaitedKeyIsSatisfiedByALaterSubmit) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 2, .unknown_dependency = UnknownDependency::Await{60s}});
    const TaskId child = h.submit(after(pool, Dep::on_success("later")), t0);
    EXPECT_EQ(h.engine.status(child), S::Blocked);
    const TaskId parent = h.submit(keyed(pool, "later"), t0 + 10s);
    EXPECT_EQ(h.engine.status(child), S::Blocked);
    h.tick(t0 + 61s);  // the await timeout no longer applies
    EXPECT_EQ(h.engine.status(child), S::Blocked);
    h.complete(h.lease_of(parent), Outcome::success(), t0 + 70s);
    EXPECT_EQ(h.engine.status(child), S::Running);
}

TEST(DependencyTest, AnAwaitedKeyThatNeverComesEndsSkipped) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .unknown_dependency = UnknownDependency::Await{30s}});
    const TaskId child = h.submit(after(pool, Dep::on_complete("never")), t0);
    EXPECT_EQ(h.engine.next_wakeup(), t0 + 30s);
    h.tick(t0 + 30s);
    EXPECT_EQ(h.engine.status(child), S::Skipped);
    EXPECT_NE(h.statuses_of(child).back().message.find("\"never\""), std::string::npos);
    // Nothing is left waiting for the key.
    const TaskId late = h.submit(keyed(pool, "never"), t0 + 31s);
    EXPECT_EQ(h.engine.status(late), S::Running);
    EXPECT_EQ(h.engine.live_tasks(), 1u);
}

TEST(DependencyTest, ABlockedTaskSkippedByItsOwnerEndsSkippedWithItsDependentsAndAwaitsNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .unknown_dependency = UnknownDependency::Await{30s}});
    TaskSpec awaiting = after(pool, Dep::on_success("elsewhere"));
    awaiting.key = "mid";
    const TaskId child = h.submit(awaiting, t0);
    const TaskId grandchild = h.submit(after(pool, Dep::on_success("mid")), t0);
    EXPECT_TRUE(h.skip_blocked(child, "held by another shard", t0 + 1s));
    EXPECT_EQ(h.engine.status(child), S::Skipped);
    EXPECT_EQ(h.statuses_of(child).back().message, "held by another shard");
    EXPECT_EQ(h.engine.status(grandchild), S::Skipped);
    EXPECT_FALSE(h.skip_blocked(child, "again", t0 + 2s)) << "a terminal task is not Blocked";
    // Its await timer finds nothing to do; a task with the key later runs.
    h.tick(t0 + 31s);
    const TaskId late = h.submit(keyed(pool, "elsewhere"), t0 + 32s);
    EXPECT_EQ(h.engine.status(late), S::Running);
    EXPECT_FALSE(h.skip_blocked(late, "not blocked", t0 + 33s));
    EXPECT_EQ(h.engine.status(late), S::Running);
}

TEST(DependencyTest, SelfAndAwaitedCyclesAreRejected) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 1, .unknown_dependency = UnknownDependency::Await{60s}});
    TaskSpec self = keyed(pool, "me");
    self.depends_on.push_back(Dep::on_success("me"));
    EXPECT_EQ(h.try_submit(self, t0).error(), SubmitError::Cycle);
    // x awaits "b"; b would depend on x: a cycle through the awaited key.
    const TaskId x = h.submit(after(pool, Dep::on_success("b")), t0);
    TaskSpec b = keyed(pool, "b");
    b.depends_on.push_back(Dep::on_success(x));
    const auto r = h.try_submit(b, t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Cycle);
    EXPECT_EQ(h.engine.status(x), S::Blocked);
    EXPECT_EQ(h.engine.find_key("b"), std::nullopt);
}

TEST(DependencyTest, CancellingABlockedTaskKeepsItCancelled) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId parent = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId child = h.submit(after(pool, Dep::on_success(parent)), t0);
    EXPECT_TRUE(h.cancel(child, t0 + 1s));
    h.complete(h.lease_of(parent), Outcome::success(), t0 + 2s);
    EXPECT_EQ(h.engine.status(child), S::Cancelled);
    EXPECT_TRUE(h.dispatches().empty());
}

TEST(DependencyTest, ShutdownCancelsBlockedTasks) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId parent = h.submit(TaskSpec{.pool = pool}, t0);
    const TaskId child = h.submit(after(pool, Dep::on_success(parent)), t0);
    h.shutdown(t0 + 1s, t0 + 1s);
    EXPECT_EQ(h.engine.status(child), S::Cancelled);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

// ---- batches ------------------------------------------------------------------

TEST(BatchTest, MembersMayDependOnEachOtherInAnyOrder) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    TaskSpec load = after(pool, Dep::on_success("transform"));
    TaskSpec transform = keyed(pool, "transform");
    transform.depends_on.push_back(Dep::on_success("fetch"));
    const auto r = h.submit_batch({load, transform, keyed(pool, "fetch")}, t0);
    ASSERT_TRUE(r.has_value()) << r.message();
    const auto& ids = r.value();
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(h.only_dispatch().task, ids[2]);
    EXPECT_EQ(h.engine.status(ids[0]), S::Blocked);
    EXPECT_EQ(h.engine.status(ids[1]), S::Blocked);
    EXPECT_EQ(h.engine.find_key("transform"), ids[1]);
}

TEST(BatchTest, AnyErrorAdmitsNothing) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    TaskSpec bad{.pool = pool};
    bad.timeout = -1s;
    const auto r = h.submit_batch({keyed(pool, "a"), bad}, t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid);
    EXPECT_NE(r.message().find("task 1"), std::string::npos);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.live_tasks(), 0u);
    EXPECT_EQ(h.engine.find_key("a"), std::nullopt);
}

TEST(BatchTest, AKeyDefinedTwiceIsRejected) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    const auto r = h.submit_batch({keyed(pool, "k"), keyed(pool, "k")}, t0);
    EXPECT_EQ(r.error(), SubmitError::DuplicateKeyInBatch);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(BatchTest, ACycleInsideTheBatchIsRejected) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 4});
    TaskSpec a = keyed(pool, "a"), b = keyed(pool, "b"), c = keyed(pool, "c");
    a.depends_on.push_back(Dep::on_success("c"));
    b.depends_on.push_back(Dep::on_success("a"));
    c.depends_on.push_back(Dep::on_complete("b"));
    const auto r = h.submit_batch({a, b, c, keyed(pool, "free")}, t0);
    EXPECT_EQ(r.error(), SubmitError::Cycle);
    EXPECT_TRUE(h.last.empty());
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(BatchTest, ReservationsOfTheWholeBatchAreCheckedTogether) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{.name = "p", .capacity = 2, .max_workers = 2});  // limit 1
    TaskSpec a{.pool = pool}, b{.pool = pool};
    a.start = t0 + 10s;
    b.start = t0 + 10s;
    EXPECT_EQ(h.submit_batch({a, b}, t0).error(), SubmitError::ReservationConflict);
    EXPECT_EQ(h.engine.live_tasks(), 0u);
}

TEST(BatchTest, AHeldKeyInABatchNamesItsHolder) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const TaskId held = h.submit(keyed(pool, "k"), t0);
    const auto r = h.submit_batch({keyed(pool, "k"), after(pool, Dep::on_success("k"))}, t0 + 1s);
    ASSERT_TRUE(r.has_value()) << r.message();
    EXPECT_EQ(r.value()[0], held);
    EXPECT_EQ(h.engine.status(r.value()[1]), S::Blocked);
    EXPECT_EQ(h.engine.live_tasks(), 2u);
}

}  // namespace
}  // namespace cronoq::core::test::dependency_test
