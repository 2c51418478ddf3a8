// Recovery at a random step (docs/guide/durability.md "Recovery"), randomized, on each
// backend: a child
// process makes random calls on a scheduler with a store (submissions with
// and without keys, dependencies, fixed starts, priorities, attempts that
// succeed, fail, fail retryably or run until cancelled; cancels; retries)
// and is killed with SIGKILL after a random number of them. What the store
// committed is then what a new leader recovers: every row's task comes back
// under its id with its committed status, or with the status recovery
// itself gives it (a Running attempt counts as a retryable failure, a
// Ready task may start at once, a Blocked one is evaluated again), and
// the new leader's store holds the same tasks.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <future>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using namespace cronoq;

namespace cronoq::test {

namespace {

/// "ok", "fail" (permanent), "flaky" (retryable) or "wait" (until
/// cancelled), after a pause of a millisecond or two.
Pool<std::string, std::string> behaving_pool() {
    return Pool<std::string, std::string>("p")
        .workers(3, 3, 3)
        .retry(RetryPolicy{3, 2ms, 2.0, 10ms, false})
        .executor_fn([](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            if (*s == "wait") {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            asio::steady_timer pause(co_await asio::this_coro::executor, 1ms);
            co_await pause.async_wait(asio::use_awaitable);
            if (*s == "fail") co_return TaskError::permanent("told to fail");
            if (*s == "flaky") co_return TaskError::retryable("flaky");
            co_return *s + "!";
        });
}

}  // namespace

/// `--child random <location> <seed>`: random calls until killed, "S <n>"
/// after call n.
int random_child_main(int argc, char** argv) {
    if (argc != 5) return 2;
    auto sched = Durable::builder().threads(2).retention(24h).pool(behaving_pool()).store(open_location(argv[3])).open();
    std::mt19937_64 random(std::stoull(argv[4]));
    const auto pick = [&](int n) { return static_cast<int>(random() % static_cast<std::uint64_t>(n)); };
    // Few attempts that wait for their cancellation: they hold slots.
    const char* behaviours[] = {"ok", "ok", "ok", "ok", "ok", "fail", "flaky", "flaky", "flaky", "wait"};
    std::vector<TaskId> ids;
    std::vector<std::string> keys;
    for (int step = 1;; ++step) {
        try {
            const int op = pick(10);
            if (op < 7 || ids.empty()) {
                Task<std::string> task(behaviours[pick(10)]);
                task.priority(static_cast<Priority>(pick(4)));
                if (pick(3) == 0) {
                    keys.push_back("k" + std::to_string(step));
                    task.key(keys.back());
                }
                if (!keys.empty() && pick(5) == 0) {
                    const std::string& parent = keys[static_cast<std::size_t>(pick(static_cast<int>(keys.size())))];
                    task.depends_on(pick(2) == 0 ? Dep::on_success(parent) : Dep::on_complete(parent));
                }
                if (pick(10) == 0) task.start_in(1h);
                ids.push_back(sched.submit(std::move(task)).id());
            } else if (op < 9) {
                sched.cancel(TaskRef(ids[static_cast<std::size_t>(pick(static_cast<int>(ids.size())))]));
            } else {
                if (auto again = sched.retry(TaskRef(ids[static_cast<std::size_t>(pick(static_cast<int>(ids.size())))])))
                    ids.push_back(again->id());
            }
        } catch (const SubmitException&) {
            // A dependency on a key whose holder was forgotten, say: nothing admitted.
        }
        say("S " + std::to_string(step));
    }
}

}  // namespace cronoq::test

namespace {

/// What recovery may turn a committed status into before the test looks.
bool recovered_as(TaskStatus committed, TaskStatus now) {
    using S = TaskStatus;
    if (is_terminal(committed)) return now == committed;
    switch (committed) {
    case S::Ready: return now == S::Ready || now == S::Running;
    case S::Retrying: return now == S::Retrying || now == S::Ready || now == S::Running;
    // The attempt counts as a retryable failure under the retry policy.
    case S::Running: return now == S::Retrying || now == S::Ready || now == S::Running || now == S::DeadLettered;
    case S::Scheduled: return now == S::Scheduled;  // an hour ahead
    // Its edges are evaluated again against the recovered parents.
    case S::Blocked: return now == S::Blocked || now == S::Ready || now == S::Running || now == S::Skipped;
    default: return false;
    }
}

std::map<std::uint64_t, TaskStatus> committed_rows(const std::string& location) {
    std::map<std::uint64_t, TaskStatus> out;
    for (const auto& [id, row] : test::task_rows(location)) out[id] = std::get<0>(row);
    return out;
}

class RecoveryInvariant : public ::testing::TestWithParam<std::tuple<test::Backend, unsigned>> {};

}  // namespace

TEST_P(RecoveryInvariant, TheRecoveredTasksAreTheCommittedOnes) {
    test::TestStore at(std::get<0>(GetParam()));
    const unsigned seed = std::get<1>(GetParam());
    std::mt19937 random(seed);
    const int kill_after = std::uniform_int_distribution<int>(5, 150)(random);
    {
        test::Child child({"random", at.location(), std::to_string(seed)});
        for (int steps = 0; steps < kill_after;) {
            auto line = child.read_line();
            ASSERT_TRUE(line.has_value()) << "the child stopped early";
            if (line->rfind("S ", 0) == 0) ++steps;
        }
        child.signal(SIGKILL);
        EXPECT_EQ(child.wait(), 128 + SIGKILL);
    }
    const auto committed = committed_rows(at.location());
    ASSERT_FALSE(committed.empty());

    // The new leader's attempts wait for the gate: what it shows at once is
    // what it recovered, not what it ran since.
    std::promise<void> gate;
    std::shared_future<void> gate_open = gate.get_future().share();
    auto sched = test::Durable::builder()
                     .threads(2)
                     .retention(24h)
                     .pool(test::gated_pool(gate_open, 3))
                     .store(at.open())
                     .open();
    std::uint64_t largest = 0;
    std::map<TaskStatus, int> seen;
    for (const auto& [id, status] : committed) {
        largest = std::max(largest, id);
        const auto now = sched.status(TaskRef(TaskId{id}));
        ASSERT_TRUE(now.has_value()) << "task " << id << " (" << to_string(status) << ") did not come back";
        EXPECT_TRUE(recovered_as(status, *now))
            << "task " << id << " was committed " << to_string(status) << ", came back " << to_string(*now);
        ++seen[status];
    }
    // Nothing comes back that was not committed.
    for (std::uint64_t id = 1; id <= largest + 10; ++id) {
        if (!committed.count(id)) {
            EXPECT_FALSE(sched.status(TaskRef(TaskId{id})).has_value()) << id;
        }
    }
    sched.flush();
    // One count, in one statement: the new leader moves tasks between
    // statuses while a list per status would be read.
    EXPECT_EQ(at.count_tasks(), static_cast<std::int64_t>(committed.size()));
    std::string summary;
    for (const auto& [s, n] : seen) summary += std::string(to_string(s)) + " " + std::to_string(n) + " ";
    std::cout << "killed after " << kill_after << " calls; committed: " << summary << "\n";
    gate.set_value();
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Stores, RecoveryInvariant,
                         ::testing::Combine(::testing::ValuesIn(test::tested_backends()),
                                            ::testing::Values(1u, 2u, 3u, 4u, 5u, 6u)),
                         test::BackendSeedName{});
