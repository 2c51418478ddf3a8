// Status events: Scheduler::subscribe() and EventStream (docs/guide/operations.md, docs/guide/README.md).
#include "driver_harness.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace events_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// Fails retryably with "flaky" on the first attempt of a negative input;
// otherwise returns its input.
asio::awaitable<Result<int>> flaky(TaskContext ctx, std::shared_ptr<const int> x) {
    if (*x < 0 && ctx.attempt() == 1) co_return TaskError::retryable("flaky");
    co_return *x;
}

// Pool "p" whose attempts run `flaky`.
Sched flaky_scheduler(asio::io_context& io) {
    return Sched::builder().pool(Pool<int, int>("p").executor_fn(flaky)).build(io.get_executor());
}

// The events of a task that succeeded at its first attempt.
const std::vector<TaskStatus> ran_once{TaskStatus::Ready, TaskStatus::Running, TaskStatus::Succeeded};

asio::awaitable<Result<int>> wait_for_cancel(TaskContext ctx, std::shared_ptr<const int>) {
    co_await ctx.cancelled();
    co_return TaskError::cancelled();
}

std::vector<StatusEvent> drain(EventStream& s) {
    std::vector<StatusEvent> out;
    while (auto e = s.try_next()) out.push_back(std::move(*e));
    return out;
}

std::vector<TaskStatus> statuses(const std::vector<StatusEvent>& events) {
    std::vector<TaskStatus> out;
    for (const auto& e : events) out.push_back(e.status);
    return out;
}

// `events` are those of task `id` alone, which succeeded at its first attempt.
void expect_ran_once(const std::vector<StatusEvent>& events, TaskId id) {
    EXPECT_EQ(statuses(events), ran_once);
    for (const auto& e : events) EXPECT_EQ(e.id, id);
}

std::vector<std::uint32_t> attempts(const std::vector<StatusEvent>& events) {
    std::vector<std::uint32_t> out;
    for (const auto& e : events) out.push_back(e.attempt);
    return out;
}

// Reads `stream` until an event with a terminal status (or the end), into `out`.
asio::awaitable<void> read_until_terminal(EventStream* stream, std::vector<StatusEvent>* out) {
    for (;;) {
        auto e = co_await stream->next();
        if (!e) co_return;
        out->push_back(*e);
        if (is_terminal(e->status)) co_return;
    }
}

// Reads `stream` to its end (next() returning empty), into `out`.
asio::awaitable<void> read_all(EventStream* stream, std::vector<StatusEvent>* out) {
    while (auto e = co_await stream->next()) out->push_back(std::move(*e));
}

asio::awaitable<std::optional<StatusEvent>> read_one(EventStream* stream) { co_return co_await stream->next(); }

}  // namespace

TEST(Events, SuccessfulTaskYieldsReadyRunningSucceeded) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto sched = Sched::builder().clock(clock).pool(Pool<int, int>("evpool").executor_fn(flaky)).build(io.get_executor());
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(3).kind("resize").key("job-1")).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Succeeded);
    const auto events = drain(stream);
    EXPECT_EQ(statuses(events), ran_once);
    EXPECT_EQ(attempts(events), (std::vector<std::uint32_t>{0, 1, 1}));
    for (const auto& e : events) {
        EXPECT_EQ(e.id, h.id());
        EXPECT_EQ(e.pool, "evpool");
        EXPECT_EQ(e.kind, "resize");
        EXPECT_EQ(e.key, std::optional<std::string>("job-1"));
        EXPECT_EQ(e.message, "");
        EXPECT_EQ(e.at, ManualClock::default_start());  // virtual time never moved
    }
}

TEST(Events, TaskWithoutKeyOrKindHasEmptyOnes) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(1)).value();
    io.run();
    const auto events = drain(stream);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events.front().key, std::nullopt);
    EXPECT_EQ(events.front().kind, "");
    EXPECT_EQ(events.front().pool, "p");  // the default pool is named
}

TEST(Events, EventsBeforeSubscribingAreNotDelivered) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto before = sched.try_submit(Task<int>(1)).value();
    io.run();
    auto stream = sched.subscribe();
    EXPECT_EQ(stream.try_next(), std::nullopt);
    auto after = sched.try_submit(Task<int>(2)).value();
    io.restart();  // the first run() stopped the io_context when it ran out of work
    io.run();
    const auto events = drain(stream);
    ASSERT_EQ(events.size(), 3u);
    for (const auto& e : events) EXPECT_EQ(e.id, after.id());
}

TEST(Events, RetriedTaskShowsRetryingWithTheErrorThenRunsAgain) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto sched = Sched::builder()
                     .clock(clock)
                     .pool(Pool<int, int>("p").retry(RetryPolicy{2, 1s, 2.0, 1s, false}).executor_fn(flaky))
                     .build(io.get_executor());
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(-1).key("k")).value();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Retrying);
    auto first = drain(stream);
    EXPECT_EQ(statuses(first), (std::vector{TaskStatus::Ready, TaskStatus::Running, TaskStatus::Retrying}));
    ASSERT_EQ(first.size(), 3u);
    EXPECT_EQ(first[2].message, "flaky");
    EXPECT_EQ(first[2].attempt, 1u);

    clock->advance(999ms);  // not yet
    io.restart();
    io.poll();
    EXPECT_EQ(h.status(), TaskStatus::Retrying);
    EXPECT_EQ(stream.try_next(), std::nullopt);

    clock->advance(1ms);
    io.restart();
    io.poll();
    ASSERT_EQ(h.status(), TaskStatus::Succeeded);
    const auto second = drain(stream);
    EXPECT_EQ(statuses(second), ran_once);
    EXPECT_EQ(attempts(second), (std::vector<std::uint32_t>{1, 2, 2}));
    for (const auto& e : second) {
        EXPECT_EQ(e.id, h.id());
        EXPECT_EQ(e.key, std::optional<std::string>("k"));
        EXPECT_EQ(e.at, ManualClock::default_start() + 1s);
    }
}

TEST(Events, DeadLetteredTaskKeepsItsLastErrorInTheEvent) {
    asio::io_context io;
    auto sched = Sched::builder()
                     .pool(Pool<int, int>("p").retry(RetryPolicy::none()).executor_fn(flaky))
                     .build(io.get_executor());
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(-1)).value();
    io.run();
    const auto events = drain(stream);
    ASSERT_EQ(statuses(events), (std::vector{TaskStatus::Ready, TaskStatus::Running, TaskStatus::DeadLettered}));
    EXPECT_EQ(events.back().message, "flaky");
    EXPECT_EQ(h.status(), TaskStatus::DeadLettered);
}

TEST(Events, UnreadBoundedStreamKeepsTheNewestAndCountsTheDropped) {
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto sched = Sched::builder()
                     .clock(clock)
                     .event_capacity(4)
                     .pool(Pool<int, int>("p").workers(1, 1, 1).executor_fn(flaky))
                     .build(io.get_executor());
    auto stream = sched.subscribe();
    std::vector<TaskHandle<int>> handles;
    for (int i = 0; i < 10; ++i) handles.push_back(sched.try_submit(Task<int>(i)).value());
    io.poll();
    for (const auto& h : handles) ASSERT_EQ(h.status(), TaskStatus::Succeeded);  // the scheduler was not slowed
    // 10 tasks x (ready, running, succeeded) = 30 events, 4 kept.
    EXPECT_EQ(stream.dropped(), 26u);
    const auto kept = drain(stream);
    ASSERT_EQ(kept.size(), 4u);
    // One worker: the tasks ran one after another, so the newest four
    // transitions are the last two tasks running and succeeding.
    EXPECT_EQ(statuses(kept),
              (std::vector{TaskStatus::Running, TaskStatus::Succeeded, TaskStatus::Running, TaskStatus::Succeeded}));
    EXPECT_EQ(kept[0].id, handles[8].id());
    EXPECT_EQ(kept[1].id, handles[8].id());
    EXPECT_EQ(kept[2].id, handles[9].id());
    EXPECT_EQ(kept[3].id, handles[9].id());
    EXPECT_EQ(stream.dropped(), 26u);  // reading does not count as dropping
}

TEST(Events, SubscribersAreIndependent) {
    asio::io_context io;
    auto sched = Sched::builder().event_capacity(2).pool(Pool<int, int>("p").executor_fn(flaky)).build(io.get_executor());
    auto reader = sched.subscribe();
    auto idle = sched.subscribe();
    auto h = sched.try_submit(Task<int>(1)).value();
    // Read `reader` as events come: the submit produced ready and running.
    auto r1 = drain(reader);
    io.run();
    auto r2 = drain(reader);
    r1.insert(r1.end(), r2.begin(), r2.end());
    EXPECT_EQ(statuses(r1), ran_once);
    EXPECT_EQ(reader.dropped(), 0u);
    EXPECT_EQ(idle.dropped(), 1u);
    EXPECT_EQ(statuses(drain(idle)), (std::vector{TaskStatus::Running, TaskStatus::Succeeded}));
}

TEST(Events, NextSuspendsUntilAnEventArrives) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    std::vector<StatusEvent> seen;
    bool done = false;
    asio::co_spawn(io, read_until_terminal(&stream, &seen), [&](std::exception_ptr e) {
        EXPECT_FALSE(e);
        done = true;
    });
    io.poll();
    EXPECT_FALSE(done);  // suspended: nothing to read
    EXPECT_TRUE(seen.empty());
    EXPECT_FALSE(io.stopped());  // the waiting reader is outstanding work
    auto h = sched.try_submit(Task<int>(7)).value();
    io.restart();
    io.run();  // returns once the reader has seen the terminal event
    EXPECT_TRUE(done);
    expect_ran_once(seen, h.id());
}

TEST(Events, NextAfterShutdownDrainsThenReturnsNullopt) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    auto h = sched.try_submit(Task<int>(1)).value();
    io.run();
    cronoq::test::run(io, sched.shutdown(0s));
    // Queued events are still delivered, then the end.
    std::vector<StatusEvent> seen;
    cronoq::test::run(io, read_until_terminal(&stream, &seen));
    EXPECT_EQ(statuses(seen), ran_once);
    EXPECT_EQ(cronoq::test::run(io, read_one(&stream)), std::nullopt);
    EXPECT_EQ(cronoq::test::run(io, read_one(&stream)), std::nullopt);  // stays ended
    // A stream subscribed after the shutdown is ended from the start.
    auto late = sched.subscribe();
    EXPECT_EQ(cronoq::test::run(io, read_one(&late)), std::nullopt);
}

TEST(Events, ShutdownEndsAWaitingReaderWithNullopt) {
    asio::io_context io;
    auto sched = Sched::builder().pool(Pool<int, int>("p").executor_fn(wait_for_cancel)).build(io.get_executor());
    auto h = sched.try_submit(Task<int>(1)).value();
    io.poll();
    auto stream = sched.subscribe();
    std::vector<StatusEvent> seen;
    bool done = false;
    asio::co_spawn(io, read_all(&stream, &seen), [&](std::exception_ptr e) {
        EXPECT_FALSE(e);
        done = true;
    });
    io.poll();
    EXPECT_FALSE(done);
    cronoq::test::run(io, sched.shutdown(0s));
    io.restart();
    io.run();
    EXPECT_TRUE(done);
    // The running task's cancellation was its last event.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back().status, TaskStatus::Cancelled);
    EXPECT_EQ(seen.back().id, h.id());
    EXPECT_EQ(cronoq::test::run(io, read_one(&stream)), std::nullopt);
}

// A reader waiting in next() whose coroutine the test can cancel.
struct CancellableReader {
    asio::cancellation_signal signal;
    std::exception_ptr error;
    bool done = false;
    std::optional<StatusEvent> got;

    CancellableReader(asio::io_context& io, EventStream& stream) {
        asio::co_spawn(io, read_one(&stream),
                       asio::bind_cancellation_slot(signal.slot(), [this](std::exception_ptr e, std::optional<StatusEvent> v) {
                           error = e;
                           got = std::move(v);
                           done = true;
                       }));
        io.poll();
    }
};

TEST(Events, CancellingAWaitingReaderAbortsItAndLosesNoEvent) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    CancellableReader reader(io, stream);
    auto& [signal, error, done, got] = reader;
    ASSERT_FALSE(done);
    signal.emit(asio::cancellation_type::terminal);
    io.poll();
    ASSERT_TRUE(done);
    ASSERT_TRUE(error);
    try {
        std::rethrow_exception(error);
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), asio::error::operation_aborted);
    }
    EXPECT_FALSE(got);
    // The stream is still live: every event arrives, none was eaten.
    auto h = sched.try_submit(Task<int>(2)).value();
    io.restart();  // the reader's end left the io_context without work: stopped
    io.run();
    EXPECT_EQ(h.status(), TaskStatus::Succeeded);
    std::vector<StatusEvent> seen;
    cronoq::test::run(io, read_until_terminal(&stream, &seen));
    EXPECT_EQ(statuses(seen), ran_once);
    EXPECT_EQ(stream.dropped(), 0u);
}

TEST(Events, CancellationRacingAnArrivingEventLosesNoEvent) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    CancellableReader reader(io, stream);
    auto& [signal, error, done, got] = reader;
    ASSERT_FALSE(done);
    // An event wakes the reader (its resumption is posted), then the reader
    // is cancelled before it runs: whichever wins, the event is not lost.
    auto h = sched.try_submit(Task<int>(2)).value();
    signal.emit(asio::cancellation_type::terminal);
    io.restart();
    io.run();
    ASSERT_TRUE(done);
    std::vector<StatusEvent> seen;
    if (got) seen.push_back(*got);
    else EXPECT_TRUE(error);
    auto rest = drain(stream);
    seen.insert(seen.end(), rest.begin(), rest.end());
    expect_ran_once(seen, h.id());
}

TEST(Events, ClosedStreamStopsReceivingButKeepsQueuedEvents) {
    asio::io_context io;
    auto sched = flaky_scheduler(io);
    auto stream = sched.subscribe();
    auto first = sched.try_submit(Task<int>(1)).value();
    io.run();
    stream.close();
    auto second = sched.try_submit(Task<int>(2)).value();
    io.restart();
    io.run();
    EXPECT_EQ(second.status(), TaskStatus::Succeeded);
    std::vector<StatusEvent> seen;
    cronoq::test::run(io, read_until_terminal(&stream, &seen));
    expect_ran_once(seen, first.id());
    EXPECT_EQ(cronoq::test::run(io, read_one(&stream)), std::nullopt);
}
}  // namespace events_test
