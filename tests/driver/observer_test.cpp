// Builder::observer (docs/guide/operations.md, "Tracing"): exactly one end
// per start, start before end, under retries, timeouts, cancellation and a
// throwing executor; the submitter's traceparent on every attempt; a
// throwing observer changes nothing.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace observer_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

/// What the observer saw, in order, and the checks every test shares.
struct Seen {
    std::mutex mu;
    std::vector<AttemptStart> starts;
    std::vector<AttemptEnd> ends;
    std::vector<std::string> order;  // "start <task>/<attempt>", "end <task>/<attempt>"
    bool throw_too = false;

    AttemptObserver observer() {
        return AttemptObserver{
            [this](const AttemptStart& s) {
                {
                    std::lock_guard lock(mu);
                    starts.push_back(s);
                    order.push_back("start " + std::to_string(s.task.value) + "/" + std::to_string(s.attempt));
                }
                if (throw_too) throw std::runtime_error("observer fails on start");
            },
            [this](const AttemptEnd& e) {
                {
                    std::lock_guard lock(mu);
                    ends.push_back(e);
                    order.push_back("end " + std::to_string(e.start.task.value) + "/" + std::to_string(e.start.attempt));
                }
                if (throw_too) throw 7;  // not even a std::exception
            }};
    }
    /// Every start has exactly one end, after it.
    void expect_paired() {
        std::lock_guard lock(mu);
        std::map<std::string, int> open;
        for (const std::string& line : order) {
            if (line.rfind("start ", 0) == 0) {
                EXPECT_EQ(open[line.substr(6)]++, 0) << "started twice: " << line;
            } else {
                EXPECT_EQ(open[line.substr(4)]--, 1) << "an end without its start before it: " << line;
            }
        }
        for (const auto& [attempt, count] : open) EXPECT_EQ(count, 0) << "no end for " << attempt;
    }
};

// "fail" fails retryably, "boom" throws, "wait" waits for its cancellation;
// others succeed with their length.
Pool<std::string, int> pool(RetryPolicy retry) {
    return Pool<std::string, int>("p").workers(2, 2, 2).retry(retry).executor_fn(
        [](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<int>> {
            if (*s == "fail") co_return TaskError::retryable("flaky");
            if (*s == "boom") throw std::runtime_error("kaboom");
            if (*s == "wait") {
                co_await ctx.cancelled();
                co_return TaskError::cancelled();
            }
            co_return static_cast<int>(s->size());
        });
}

Scheduler<std::string, int> make(test::VirtualTime& vt, Seen& seen, RetryPolicy retry = RetryPolicy::none()) {
    return Scheduler<std::string, int>::builder()
        .clock(vt.clock)
        .observer(seen.observer())
        .pool(pool(retry))
        .build(vt.io.get_executor());
}

}  // namespace

TEST(Observer, ASuccessIsOneStartThenOneEndWithTheTasksFields) {
    test::VirtualTime vt;
    Seen seen;
    auto sched = make(vt, seen);
    const std::string tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    auto h = sched.try_submit(Task<std::string>("abc").pool("p").kind("k").key("order-1").traceparent(tp)).value();
    vt.advance(0s);
    EXPECT_EQ(*test::run(vt.io, h.result()), 3);
    ASSERT_EQ(seen.starts.size(), 1u);
    ASSERT_EQ(seen.ends.size(), 1u);
    const AttemptStart& s = seen.starts[0];
    EXPECT_EQ(s.task, h.id());
    EXPECT_EQ(s.attempt, 1u);
    EXPECT_TRUE(s.lease);
    EXPECT_EQ(s.pool, "p");
    EXPECT_EQ(s.kind, "k");
    EXPECT_EQ(s.key, "order-1");
    EXPECT_EQ(s.traceparent, tp);
    EXPECT_EQ(s.at, vt.clock->system_now());
    const AttemptEnd& e = seen.ends[0];
    EXPECT_EQ(e.start.lease, s.lease);
    EXPECT_EQ(e.outcome, TaskStatus::Succeeded);
    EXPECT_EQ(e.duration, 0ns) << "no time passed on the manual clock";
    seen.expect_paired();
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Observer, RetriesEachEndOnceAndCarryTheSameTraceparentFromATag) {
    test::VirtualTime vt;
    Seen seen;
    auto sched = make(vt, seen, RetryPolicy{3, 1s, 1.0, 1s, false});
    auto h = sched.try_submit(Task<std::string>("fail").pool("p").tag("traceparent", "00-abc-def-01")).value();
    for (int i = 0; i < 5; ++i) vt.advance(1s);
    EXPECT_EQ(h.status(), TaskStatus::DeadLettered);
    ASSERT_EQ(seen.ends.size(), 3u);
    EXPECT_EQ(seen.ends[0].outcome, TaskStatus::Retrying);
    EXPECT_EQ(seen.ends[0].message, "flaky");
    EXPECT_EQ(seen.ends[1].outcome, TaskStatus::Retrying);
    EXPECT_EQ(seen.ends[2].outcome, TaskStatus::DeadLettered);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(seen.starts[i].attempt, i + 1);
        EXPECT_EQ(seen.starts[i].traceparent, "00-abc-def-01");
    }
    seen.expect_paired();
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Observer, ATimeoutACancelAndAThrowingExecutorEachEndTheirAttempt) {
    test::VirtualTime vt;
    Seen seen;
    auto sched = make(vt, seen);
    auto timed_out = sched.try_submit(Task<std::string>("wait").pool("p").timeout(2s)).value();
    auto cancelled = sched.try_submit(Task<std::string>("wait").pool("p")).value();
    vt.advance(0s);
    EXPECT_TRUE(cancelled.cancel());
    vt.advance(2s);
    auto thrown = sched.try_submit(Task<std::string>("boom").pool("p")).value();
    vt.advance(0s);
    EXPECT_TRUE(is_terminal(timed_out.status()));
    EXPECT_EQ(cancelled.status(), TaskStatus::Cancelled);
    EXPECT_TRUE(is_terminal(thrown.status()));
    std::map<TaskId, AttemptEnd> by_task;
    for (const AttemptEnd& e : seen.ends) by_task.emplace(e.start.task, e);
    ASSERT_EQ(by_task.size(), 3u);
    EXPECT_EQ(by_task.at(cancelled.id()).outcome, TaskStatus::Cancelled);
    EXPECT_EQ(by_task.at(timed_out.id()).outcome, timed_out.status());
    EXPECT_EQ(by_task.at(timed_out.id()).duration, 2s);
    EXPECT_EQ(by_task.at(thrown.id()).outcome, thrown.status());
    EXPECT_NE(by_task.at(thrown.id()).message.find("kaboom"), std::string::npos) << by_task.at(thrown.id()).message;
    seen.expect_paired();
    test::run(vt.io, sched.shutdown(0s));
}

TEST(Observer, AttemptsAbortedByShutdownEndToo) {
    test::VirtualTime vt;
    Seen seen;
    auto sched = make(vt, seen);
    auto h = sched.try_submit(Task<std::string>("wait").pool("p")).value();
    vt.advance(0s);
    test::run(vt.io, sched.shutdown(0s));
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
    ASSERT_EQ(seen.ends.size(), 1u);
    EXPECT_EQ(seen.ends[0].outcome, TaskStatus::Cancelled);
    seen.expect_paired();
}

TEST(Observer, AThrowingObserverIsContainedAndChangesNothing) {
    test::VirtualTime vt;
    Seen seen;
    seen.throw_too = true;
    auto sched = make(vt, seen, RetryPolicy{2, 1s, 1.0, 1s, false});
    auto ok = sched.try_submit(Task<std::string>("abcd").pool("p")).value();
    auto failing = sched.try_submit(Task<std::string>("fail").pool("p")).value();
    vt.advance(0s);
    vt.advance(1s);
    EXPECT_EQ(*test::run(vt.io, ok.result()), 4);
    EXPECT_EQ(failing.status(), TaskStatus::DeadLettered);
    EXPECT_EQ(seen.starts.size(), 3u);
    EXPECT_EQ(seen.ends.size(), 3u);
    seen.expect_paired();
    test::run(vt.io, sched.shutdown(0s));
}

}  // namespace observer_test
