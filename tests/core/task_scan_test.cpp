// Engine::scan (docs/guide/operations.md, "Queries"): live and retained
// tasks newest first, filtered, paged by id so that every match appears
// once, in bounded work also when the engine holds many tasks.
#include "engine_harness.hpp"

#include <set>

namespace cronoq::core::test::task_scan_test {
namespace {

using S = TaskStatus;

std::vector<TaskId> ids_of(const TaskScanPage& page) {
    std::vector<TaskId> out;
    for (const TaskView& v : page.tasks) out.push_back(v.id);
    return out;
}

/// Every page of a scan from the top, concatenated.
std::vector<TaskId> every_page(const Engine& e, const TaskFilter& f, std::size_t limit, std::size_t* pages = nullptr) {
    std::vector<TaskId> out;
    std::uint64_t below = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t n = 0;; ++n) {
        const TaskScanPage page = e.scan(f, below, limit);
        EXPECT_LE(page.tasks.size(), limit);
        for (const TaskView& v : page.tasks) out.push_back(v.id);
        if (!page.next_below) {
            if (pages) *pages = n + 1;
            return out;
        }
        EXPECT_LT(*page.next_below, below) << "a scan always moves down";
        below = *page.next_below;
    }
}

TEST(TaskScanTest, NewestFirstWithACursorThatReturnsEveryTaskOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    std::vector<TaskId> ids;
    for (int i = 0; i < 7; ++i) ids.push_back(h.submit(TaskSpec{.pool = pool}, t0 + i * 1s));
    const TaskScanPage first = h.engine.scan({}, std::numeric_limits<std::uint64_t>::max(), 3);
    EXPECT_EQ(ids_of(first), (std::vector<TaskId>{ids[6], ids[5], ids[4]}));
    ASSERT_TRUE(first.next_below);
    h.submit(TaskSpec{.pool = pool}, t0 + 10s);  // newer than the first page: not on later ones
    const TaskScanPage second = h.engine.scan({}, *first.next_below, 3);
    EXPECT_EQ(ids_of(second), (std::vector<TaskId>{ids[3], ids[2], ids[1]}));
    const TaskScanPage last = h.engine.scan({}, *second.next_below, 3);
    EXPECT_EQ(ids_of(last), (std::vector<TaskId>{ids[0]}));
    EXPECT_FALSE(last.next_below);
    const TaskScanPage exact = h.engine.scan({}, *second.next_below, 1);
    EXPECT_FALSE(exact.next_below) << "a page that holds the last match names no next one";
    EXPECT_EQ(first.tasks[0].status, S::Ready);
    EXPECT_EQ(first.tasks[0].admitted, t0 + 6s);
}

TEST(TaskScanTest, FiltersSelectByStatusPoolKindKeyFairKeyAndAdmission) {
    Harness h;
    const PoolId a = h.add_pool(PoolConfig{"a", 1});
    const PoolId b = h.add_pool(PoolConfig{"b", 0});
    const KindId mail = h.engine.intern_kind("mail");
    TaskSpec keyed{.pool = b, .kind = mail};
    keyed.key = "order-1";
    keyed.fair_key = "tenant-1";
    const TaskId running = h.submit(TaskSpec{.pool = a}, t0);
    const TaskId ready = h.submit(keyed, t0 + 1s);
    TaskSpec other_key{.pool = b};
    other_key.key = "invoice-1";
    const TaskId invoice = h.submit(other_key, t0 + 2s);
    const TaskId done = h.submit(TaskSpec{.pool = a}, t0 + 3s);  // queued behind `running`
    h.complete(h.lease_of(running), Outcome::success(), t0 + 4s);  // `done` starts
    h.complete(h.lease_of(done), Outcome::success(), t0 + 5s);

    const auto all = [&](TaskFilter f) { return every_page(h.engine, f, 10); };
    TaskFilter succeeded;
    succeeded.statuses = 1u << static_cast<unsigned>(S::Succeeded);
    EXPECT_EQ(all(succeeded), (std::vector<TaskId>{done, running})) << "retained tasks are seen";
    TaskFilter in_b;
    in_b.pool = b;
    EXPECT_EQ(all(in_b), (std::vector<TaskId>{invoice, ready}));
    TaskFilter kind;
    kind.kind = "mail";
    EXPECT_EQ(all(kind), std::vector<TaskId>{ready});
    TaskFilter prefix;
    prefix.key_prefix = "order-";
    EXPECT_EQ(all(prefix), std::vector<TaskId>{ready});
    prefix.key_prefix = "";
    EXPECT_EQ(all(prefix), (std::vector<TaskId>{invoice, ready})) << "a prefix never matches a task without a key";
    TaskFilter tenant;
    tenant.fair_key = "tenant-1";
    EXPECT_EQ(all(tenant), std::vector<TaskId>{ready});
    tenant.fair_key = "";
    EXPECT_EQ(all(tenant), (std::vector<TaskId>{done, invoice, running}));
    TaskFilter window;
    window.admitted_from = t0 + 1s;
    window.admitted_until = t0 + 3s;
    EXPECT_EQ(all(window), (std::vector<TaskId>{invoice, ready})) << "from <= admitted < until";

    const TaskScanPage one = h.engine.scan(kind, std::numeric_limits<std::uint64_t>::max(), 10);
    ASSERT_EQ(one.tasks.size(), 1u);
    EXPECT_EQ(one.tasks[0].key, "order-1");
    EXPECT_EQ(one.tasks[0].fair_key, "tenant-1");
    EXPECT_EQ(one.tasks[0].kind, "mail");
    EXPECT_EQ(one.tasks[0].pool, b);
    const TaskScanPage finished = h.engine.scan(succeeded, std::numeric_limits<std::uint64_t>::max(), 1);
    EXPECT_EQ(finished.tasks[0].changed, t0 + 5s) << "a terminal task changed when it ended";
    EXPECT_EQ(finished.tasks[0].attempt, 1u);
}

TEST(TaskScanTest, AForgottenTaskIsNotSeen) {
    EngineConfig config;
    config.retention = 10s;
    Harness h(config);
    const PoolId pool = h.add_pool(PoolConfig{"p", 1});
    const TaskId task = h.submit(TaskSpec{.pool = pool}, t0);
    h.complete(h.lease_of(task), Outcome::success(), t0);
    EXPECT_EQ(every_page(h.engine, {}, 10), std::vector<TaskId>{task});
    h.tick(t0 + 11s);
    h.submit(TaskSpec{.pool = pool}, t0 + 11s);  // any call forgets what is due
    EXPECT_EQ(every_page(h.engine, {}, 10).size(), 1u);
    EXPECT_NE(every_page(h.engine, {}, 10).front(), task);
}

TEST(TaskScanTest, ManyTasksAreWalkedByIdInBoundedStepsAndEveryMatchAppearsOnce) {
    Harness h;
    const PoolId pool = h.add_pool(PoolConfig{"p", 0});
    const PoolId other = h.add_pool(PoolConfig{"q", 0});
    std::vector<TaskSpec> specs;
    std::set<std::uint64_t> wanted;
    const std::size_t n = Engine::scan_all_below + 5000;
    for (std::size_t i = 0; i < n; ++i) specs.push_back(TaskSpec{.pool = i % 97 == 0 ? other : pool});
    const auto ids = h.submit_batch(specs, t0);
    ASSERT_TRUE(ids.has_value());
    for (std::size_t i = 0; i < n; ++i)
        if (i % 97 == 0) wanted.insert(ids.value()[i].value);
    TaskFilter f;
    f.pool = other;
    std::size_t pages = 0;
    const std::vector<TaskId> seen = every_page(h.engine, f, 50, &pages);
    ASSERT_EQ(seen.size(), wanted.size());
    for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i - 1].value, seen[i].value) << "newest first";
    for (const TaskId id : seen) EXPECT_TRUE(wanted.count(id.value));
    EXPECT_GE(pages, n / Engine::id_budget) << "each scan looks at a bounded number of ids";
    // Unfiltered, a page is full: ids are dense.
    const TaskScanPage top = h.engine.scan({}, std::numeric_limits<std::uint64_t>::max(), 100);
    EXPECT_EQ(top.tasks.size(), 100u);
    EXPECT_EQ(top.tasks.front().id, ids.value().back());
}

}  // namespace
}  // namespace cronoq::core::test::task_scan_test
