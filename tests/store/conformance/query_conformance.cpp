// Store::query on every backend (docs/store.md, "Queries"): each filter,
// newest first, the limit clamped, priorities read back, bad cursors
// refused, and cursor paging that returns every match exactly once while
// tasks are being inserted.
#include "store_site.hpp"

#include <cronoq/store/journal.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace cronoq::test {
namespace {

using namespace std::chrono_literals;
using store::Batch;
using Clock = std::chrono::system_clock;

// Noon of some day: every row's submitted_at is t0 + its id in seconds.
const Clock::time_point t0 = Clock::time_point(std::chrono::hours(24 * 20000 + 12));

store::TaskRow row_of(std::uint64_t id, TaskStatus status, std::string pool, std::string kind,
                      std::optional<std::string> key = std::nullopt) {
    store::TaskRow row = task_row(id, std::move(key));
    row.status = status;
    row.pool = std::move(pool);
    row.kind = std::move(kind);
    row.submitted_at = row.updated_at = t0 + std::chrono::seconds(id);
    return row;
}

std::vector<std::uint64_t> ids_of(const TaskPage& page) {
    std::vector<std::uint64_t> out;
    for (const StoredTask& t : page.tasks) out.push_back(t.id.value);
    return out;
}

std::vector<std::uint64_t> ids(const Store& store, TaskQuery query) {
    query.limit = 1000;
    const TaskPage page = store.query(query);
    EXPECT_FALSE(page.next_cursor) << "more than one page";
    return ids_of(page);
}

// Twelve tasks: pools a and b (3, 6, 9, 12), kinds x (1 to 6) and y, keyed
// 3, 4, 6, 9, 12; statuses by id % 4: ready, dead_lettered, succeeded, failed;
// fair keys "tenant-1" (2, 7, 8) and "tenant-2" (10), none for the others.
void insert_sample(Leader& leader) {
    Batch batch;
    const TaskStatus statuses[] = {TaskStatus::Ready, TaskStatus::DeadLettered, TaskStatus::Succeeded,
                                   TaskStatus::Failed};
    for (std::uint64_t id = 1; id <= 12; ++id) {
        std::optional<std::string> key;
        if (id % 3 == 0) key = "invoice-" + std::to_string(id);
        if (id == 4) key = "in%_x";  // LIKE's wildcards, compared as text
        store::TaskRow row = row_of(id, statuses[id % 4], id % 3 ? "a" : "b", id <= 6 ? "x" : "y", key);
        if (id == 5) row.options = R"({"v":1,"priority":0})";
        if (id == 6) row.options = R"({"v":1,"priority":3})";
        if (id == 2 || id == 7 || id == 8) row.fair_key = "tenant-1";
        if (id == 10) row.fair_key = "tenant-2";
        batch.changes.emplace_back(store::TaskInserted{std::move(row)});
    }
    leader.commit(std::move(batch));
}

TEST_P(Query, EachFilterSelectsItsTasksNewestFirst) {
    Leader leader(site());
    insert_sample(leader);
    const Store& s = *leader.store;
    using V = std::vector<std::uint64_t>;
    EXPECT_EQ(ids(s, {}), (V{12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}));
    EXPECT_EQ(ids(s, {.statuses = {TaskStatus::DeadLettered}}), (V{9, 5, 1}));
    EXPECT_EQ(ids(s, {.statuses = {TaskStatus::Failed, TaskStatus::DeadLettered, TaskStatus::Failed}}),
              (V{11, 9, 7, 5, 3, 1}));
    EXPECT_EQ(ids(s, {.statuses = {TaskStatus::Ready, TaskStatus::Succeeded}}), (V{12, 10, 8, 6, 4, 2}))
        << "statuses across pools";
    EXPECT_EQ(ids(s, {.pool = "a"}), (V{11, 10, 8, 7, 5, 4, 2, 1}));
    EXPECT_EQ(ids(s, {.statuses = {TaskStatus::Ready}, .pool = "b"}), (V{12}));
    EXPECT_EQ(ids(s, {.pool = "none"}), V{});
    EXPECT_EQ(ids(s, {.kind = "x"}), (V{6, 5, 4, 3, 2, 1}));
    EXPECT_EQ(ids(s, {.pool = "b", .kind = "y"}), (V{12, 9}));
    EXPECT_EQ(ids(s, {.key_prefix = "invoice-1"}), (V{12}));
    EXPECT_EQ(ids(s, {.key_prefix = ""}), (V{12, 9, 6, 4, 3})) << "every keyed task, no keyless one";
    EXPECT_EQ(ids(s, {.key_prefix = "in%_"}), (V{4}));
    EXPECT_EQ(ids(s, {.key_prefix = "i_"}), V{}) << "_ is no wildcard";
    EXPECT_EQ(ids(s, {.fair_key = ""}), (V{12, 11, 9, 6, 5, 4, 3, 1})) << "the tasks without a fair key";
    EXPECT_EQ(ids(s, {.fair_key = "tenant-1"}), (V{8, 7, 2}));
    EXPECT_EQ(ids(s, {.pool = "b", .fair_key = "tenant-1"}), V{});
    EXPECT_EQ(ids(s, {.pool = "a", .fair_key = "tenant-2"}), (V{10}));
    EXPECT_EQ(ids(s, {.fair_key = "tenant"}), V{}) << "a fair key is matched whole";
    EXPECT_EQ(ids(s, {.submitted_after = t0 + 3s, .submitted_before = t0 + 6s}), (V{5, 4, 3})) << "after <= t < before";
    EXPECT_EQ(ids(s, {.submitted_after = t0 + 11s}), (V{12, 11}));
    EXPECT_EQ(ids(s, {.submitted_before = t0 + 2s}), (V{1}));
    EXPECT_EQ(ids(s, {.submitted_after = t0 + 6s, .submitted_before = t0 + 6s}), V{});

    const TaskPage all = s.query({.limit = 1000});
    ASSERT_EQ(all.tasks.size(), 12u);
    const StoredTask& five = all.tasks[12 - 5];
    ASSERT_EQ(five.id, TaskId{5});
    EXPECT_EQ(five.priority, Priority::Critical);
    EXPECT_EQ(all.tasks[12 - 6].priority, Priority::Low);
    EXPECT_EQ(all.tasks[12 - 1].priority, Priority::Normal) << "options without a class index read as Normal";
    EXPECT_EQ(five.pool, "a");
    EXPECT_EQ(five.status, TaskStatus::DeadLettered);
    EXPECT_EQ(five.payload, "payload-5");
    EXPECT_EQ(five.submitted_at, t0 + 5s);
    EXPECT_FALSE(five.fair_key);
    EXPECT_EQ(all.tasks[12 - 7].fair_key, "tenant-1");
}

TEST_P(Query, TheLimitIsClampedAndABadCursorRefused) {
    Leader leader(site());
    Batch batch;
    for (std::uint64_t id = 1; id <= 1003; ++id) batch.changes.emplace_back(store::TaskInserted{task_row(id)});
    leader.commit(std::move(batch));
    const Store& s = *leader.store;
    const TaskPage one = s.query({.limit = 0});
    EXPECT_EQ(ids_of(one), std::vector<std::uint64_t>{1003});
    EXPECT_EQ(one.next_cursor, "1003");
    const TaskPage big = s.query({.limit = 1'000'000});
    EXPECT_EQ(big.tasks.size(), 1000u);
    ASSERT_TRUE(big.next_cursor);
    const TaskPage rest = s.query({.limit = 1'000'000, .cursor = big.next_cursor});
    EXPECT_EQ(ids_of(rest), (std::vector<std::uint64_t>{3, 2, 1}));
    EXPECT_FALSE(rest.next_cursor) << "the last page has no cursor";
    const TaskPage exact = s.query({.limit = 3, .cursor = "4"});
    EXPECT_EQ(exact.tasks.size(), 3u);
    EXPECT_FALSE(exact.next_cursor) << "nothing beyond: no empty page to fetch";
    for (const std::string bad : {"", "x", "-1", "1.5", " 1", "9223372036854775808", "99999999999999999999"})
        EXPECT_THROW(s.query({.cursor = bad}), std::invalid_argument) << bad;
}

// Pages through the store while another batch of matching tasks commits
// between pages: every task that matched when paging began comes exactly
// once, none that came later.
void expect_every_match_once(Leader& leader, TaskQuery query, const std::set<std::uint64_t>& expected,
                             std::uint64_t& next_id) {
    std::vector<std::uint64_t> seen;
    query.limit = 7;
    for (int pages = 0; pages < 1000; ++pages) {
        const TaskPage page = leader.store->query(query);
        for (const StoredTask& t : page.tasks) seen.push_back(t.id.value);
        // New tasks, matching and not, commit between every two pages.
        Batch batch;
        for (int i = 0; i < 5; ++i) {
            const std::uint64_t id = next_id++;
            batch.changes.emplace_back(
                store::TaskInserted{row_of(id, id % 2 ? TaskStatus::DeadLettered : TaskStatus::Ready, "a", "x")});
        }
        leader.commit(std::move(batch));
        if (!page.next_cursor) break;
        query.cursor = page.next_cursor;
    }
    ASSERT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
    EXPECT_EQ(std::set<std::uint64_t>(seen.begin(), seen.end()).size(), seen.size()) << "a task came twice";
    EXPECT_EQ(std::set<std::uint64_t>(seen.begin(), seen.end()), expected);
}

TEST_P(Query, CursorPagingReturnsEveryMatchOnceWhileTasksAreInserted) {
    Leader leader(site());
    Batch batch;
    std::set<std::uint64_t> all, dead_in_a, in_a;
    std::uint64_t next_id = 1;
    for (; next_id <= 200; ++next_id) {
        const TaskStatus status = next_id % 3 == 0 ? TaskStatus::DeadLettered : TaskStatus::Succeeded;
        const std::string pool = next_id % 4 == 0 ? "b" : "a";
        batch.changes.emplace_back(store::TaskInserted{row_of(next_id, status, pool, "x")});
        all.insert(next_id);
        if (pool == "a") in_a.insert(next_id);
        if (pool == "a" && status == TaskStatus::DeadLettered) dead_in_a.insert(next_id);
    }
    leader.commit(std::move(batch));
    expect_every_match_once(leader, {}, all, next_id);
    // Later inserts are in pool a; the expected sets stay as they were.
    expect_every_match_once(leader, {.statuses = {TaskStatus::DeadLettered}, .pool = "a",
                                     .submitted_before = t0 + 201s}, dead_in_a, next_id);
    expect_every_match_once(leader, {.pool = "a", .submitted_before = t0 + 201s}, in_a, next_id);
    // Statuses without a pool: a walk per pool and status, merged.
    expect_every_match_once(leader, {.statuses = {TaskStatus::Succeeded, TaskStatus::DeadLettered},
                                     .submitted_before = t0 + 201s}, all, next_id);
}

}  // namespace
}  // namespace cronoq::test
