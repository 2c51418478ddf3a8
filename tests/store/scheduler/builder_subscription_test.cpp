// A subscription taken from the builder sees what open()'s recovery does:
// the retry of a task that was Running when the previous leader stopped,
// which happens before open() returns and so before the scheduler's own
// subscribe() exists (docs/store.md, "The scheduler with a store").
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace builder_subscription_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using test::Durable;

/// Pool "p": each attempt says it started, then runs until cancelled.
Pool<std::string, std::string> held_pool(std::shared_ptr<std::atomic<bool>> started) {
    return Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [started](TaskContext ctx, std::shared_ptr<const std::string>) -> asio::awaitable<Result<std::string>> {
            started->store(true);
            started->notify_all();
            co_await ctx.cancelled();
            co_return TaskError::cancelled();
        });
}

/// A task whose row reads Running when its leader stops: the next leader
/// retries it at recovery.
TaskId leave_running(const std::filesystem::path& file) {
    auto started = std::make_shared<std::atomic<bool>>(false);
    auto sched = Durable::builder().pool(held_pool(started)).store(test::open_store(file)).open();
    const TaskId id = sched.submit(Task<std::string>("x")).id();
    started->wait(false);
    sched.flush();
    sched.shutdown(0s);
    EXPECT_EQ(test::open_store(file)->get_task(TaskRef(id))->status, TaskStatus::Running);
    return id;
}

/// What `events` holds now, without waiting.
std::vector<StatusEvent> queued(EventStream& events) {
    std::vector<StatusEvent> out;
    while (auto e = events.try_next()) out.push_back(std::move(*e));
    return out;
}

bool saw_recovery_retry(const std::vector<StatusEvent>& events, TaskId id) {
    for (const StatusEvent& e : events)
        if (e.id == id && e.status == TaskStatus::Retrying && e.message == "lease lost: scheduler restarted") return true;
    return false;
}

}  // namespace

TEST(BuilderSubscription, ABlockingSchedulersRecoveryRetryReachesASubscriptionFromItsBuilder) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    const TaskId running = leave_running(file);

    auto builder = Durable::builder();
    builder.pool(held_pool(std::make_shared<std::atomic<bool>>(false))).store(test::open_store(file));
    EventStream events = builder.subscribe();
    auto sched = builder.open();
    // Recovery happened inside open(): its events are queued already.
    const auto seen = queued(events);
    EXPECT_TRUE(saw_recovery_retry(seen, running)) << seen.size() << " event(s) seen";
    // A subscription from the scheduler, once open() returned, missed it.
    EventStream late = sched.subscribe();
    EXPECT_FALSE(saw_recovery_retry(queued(late), running));
    // The builder's stream is the scheduler's: it goes on with later events.
    const TaskId next = sched.submit(Task<std::string>("y")).id();
    sched.flush();
    sched.shutdown(0s);
    bool saw_next = false;
    for (const StatusEvent& e : queued(events)) saw_next = saw_next || e.id == next;
    EXPECT_TRUE(saw_next);
}

TEST(BuilderSubscription, AnAsyncSchedulersRecoveryRetryReachesASubscriptionFromItsBuilder) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    const TaskId running = leave_running(file);

    asio::io_context io;
    std::vector<StatusEvent> seen;
    bool opened = false;
    auto store = test::open_store(file);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            // GCC 12: no temporary in a full-expression with a co_await.
            const auto ex = co_await asio::this_coro::executor;
            auto builder = Scheduler<std::string, std::string>::builder();
            builder.pool(held_pool(std::make_shared<std::atomic<bool>>(false))).store(store);
            EventStream events = builder.subscribe();
            auto opening = builder.open(ex);
            auto sched = co_await std::move(opening);
            opened = true;
            seen = queued(events);
            co_await sched.shutdown(0s);
        },
        asio::detached);
    io.run();
    ASSERT_TRUE(opened);
    EXPECT_TRUE(saw_recovery_retry(seen, running)) << seen.size() << " event(s) seen";
}

TEST(BuilderSubscription, AStreamGoesToTheFirstSchedulerMadeAfterItOnly) {
    auto builder = Durable::builder();
    builder.pool(held_pool(std::make_shared<std::atomic<bool>>(false)));
    EventStream events = builder.subscribe();
    auto copy = builder;
    auto first = copy.build();  // a copy's scheduler takes it
    auto second = builder.build();
    second.submit(Task<std::string>("b").key("second"));
    first.submit(Task<std::string>("a").key("first"));
    first.shutdown(0s);
    second.shutdown(0s);
    const auto seen = queued(events);
    ASSERT_FALSE(seen.empty());
    for (const StatusEvent& e : seen) EXPECT_EQ(e.key, "first") << "an event of another scheduler";
}

}  // namespace builder_subscription_test
