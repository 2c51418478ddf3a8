// Bounded pools through the driver (docs/guide/resources-and-bounds.md): a waiting submit is a real
// Asio operation, resumed in FIFO order, cancellable; Reject and shedding.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>

#include <map>
#include <string>
#include <vector>

namespace bounds_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Sched = Scheduler<int, int>;

// One slot; the attempt of task n waits until `release(n)`.
struct Fixture {
    asio::io_context io;
    std::vector<int> ran;
    std::map<int, std::shared_ptr<detail::WaitList>> gates;

    std::shared_ptr<detail::WaitList> gate(int n) {
        auto& g = gates[n];
        if (!g) g = detail::WaitList::create();
        return g;
    }

    Sched build(Bounds bounds, OverflowPolicy policy) {
        auto pool = Pool<int, int>("p").workers(1, 1, 1).bounds(bounds).overflow(policy).executor_fn(
            [this](TaskContext, std::shared_ptr<const int> n) -> asio::awaitable<Result<int>> {
                ran.push_back(*n);
                auto wait = gate(*n)->async_wait(asio::use_awaitable);
                co_await std::move(wait);
                co_return *n;
            });
        return Sched::builder().pool(std::move(pool)).build(io.get_executor());
    }

    void release(int n) {
        gate(n)->set();
        io.restart();
        io.poll();
    }
};

}  // namespace

TEST(Bounds, WaitingSubmitsResumeInOrderAsRoomFrees) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::Wait);
    sched.try_submit(Task<int>(0)).value();  // runs
    sched.try_submit(Task<int>(1)).value();  // pending: the bound
    EXPECT_EQ(sched.try_submit(Task<int>(9)).error(), SubmitError::Full);
    std::vector<int> admitted;
    for (int n : {2, 3, 4})
        asio::co_spawn(f.io, sched.submit(Task<int>(n)), [&admitted, n](std::exception_ptr e, TaskHandle<int>) {
            if (!e) admitted.push_back(n);
        });
    f.io.poll();
    EXPECT_TRUE(admitted.empty()) << "submitters must wait while the pool is full";
    for (int expected = 2; expected <= 4; ++expected) {
        f.release(expected - 2);  // one attempt ends, the pending task starts: room for one
        EXPECT_EQ(admitted.back(), expected);
        EXPECT_EQ(admitted.size(), static_cast<std::size_t>(expected - 1));
    }
    EXPECT_EQ(f.ran, (std::vector<int>{0, 1, 2, 3}));
    test::run(f.io, sched.shutdown(0s));
}

TEST(Bounds, CancellingAWaitingSubmitAdmitsNothing) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::Wait);
    sched.try_submit(Task<int>(0)).value();
    sched.try_submit(Task<int>(1)).value();
    asio::cancellation_signal cancel;
    std::exception_ptr outcome;
    bool done = false;
    asio::co_spawn(f.io, sched.submit(Task<int>(2)),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, TaskHandle<int>) {
                       outcome = e;
                       done = true;
                   }));
    f.io.poll();
    EXPECT_FALSE(done);
    cancel.emit(asio::cancellation_type::terminal);
    f.io.poll();
    ASSERT_TRUE(done);
    ASSERT_TRUE(outcome);
    try {
        std::rethrow_exception(outcome);
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), asio::error::operation_aborted);
    }
    f.release(0);
    f.release(1);
    EXPECT_EQ(f.ran, (std::vector<int>{0, 1})) << "the cancelled submission ran";
    test::run(f.io, sched.shutdown(0s));
}

TEST(Bounds, ShutdownFailsWaitingSubmits) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::Wait);
    sched.try_submit(Task<int>(0)).value();
    sched.try_submit(Task<int>(1)).value();
    std::optional<SubmitError> error;
    asio::co_spawn(f.io, sched.submit(Task<int>(2)), [&](std::exception_ptr e, TaskHandle<int>) {
        try {
            if (e) std::rethrow_exception(e);
        } catch (const SubmitException& s) {
            error = s.error();
        }
    });
    f.io.poll();
    test::run(f.io, sched.shutdown(0s));
    f.io.restart();
    f.io.run();
    EXPECT_EQ(error, SubmitError::ShuttingDown);
}

TEST(Bounds, RejectAndShedThroughTheDriver) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::ShedLowest);
    sched.try_submit(Task<int>(0)).value();
    auto low = sched.try_submit(Task<int>(1).priority(Priority::Low)).value();
    auto high = sched.try_submit(Task<int>(2).priority(Priority::High)).value();
    EXPECT_EQ(low.status(), TaskStatus::Shed);
    try {
        test::run(f.io, low.result());
        FAIL();
    } catch (const TaskFailure& e) {
        EXPECT_EQ(e.status(), TaskStatus::Shed);
    }
    try {
        test::run(f.io, sched.submit(Task<int>(3).priority(Priority::High)));
        FAIL();
    } catch (const SubmitException& e) {
        EXPECT_EQ(e.error(), SubmitError::Overloaded);
    }
    EXPECT_EQ(high.status(), TaskStatus::Ready);
    test::run(f.io, sched.shutdown(0s));
}

// Room that appears after a waiting submitter was cancelled, but before its
// coroutine resumed, goes to the next waiter: the cancelled one left the
// queue in the cancellation itself.
TEST(Bounds, CancelledWaiterPassesRoomToTheNextWaiter) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::Wait);
    sched.try_submit(Task<int>(0)).value();                  // runs
    auto pending = sched.try_submit(Task<int>(1)).value();   // the bound
    asio::cancellation_signal cancel_first;
    std::exception_ptr first_error;
    bool first_done = false;
    std::vector<int> admitted;
    asio::co_spawn(f.io, sched.submit(Task<int>(2)),
                   asio::bind_cancellation_slot(cancel_first.slot(), [&](std::exception_ptr e, TaskHandle<int>) {
                       first_error = e;
                       first_done = true;
                   }));
    asio::co_spawn(f.io, sched.submit(Task<int>(3)), [&](std::exception_ptr e, TaskHandle<int>) {
        if (!e) admitted.push_back(3);
    });
    f.io.poll();
    ASSERT_FALSE(first_done);
    cancel_first.emit(asio::cancellation_type::terminal);  // the first waiter has not resumed yet
    ASSERT_TRUE(pending.cancel());                          // room for one, at once
    f.io.poll();
    ASSERT_TRUE(first_done);
    EXPECT_TRUE(first_error) << "the cancelled submit must fail with operation_aborted";
    EXPECT_EQ(admitted, (std::vector<int>{3})) << "the room went to the cancelled waiter";
    // Nothing is left waiting: the pool drains and run() returns after shutdown.
    for (int n : {0, 3}) f.release(n);
    test::run(f.io, sched.shutdown(0s));
    f.io.restart();
    f.io.run();
}

// Room handed to a waiter just before it is cancelled is not lost either:
// its wait completes normally and the task is admitted.
TEST(Bounds, WaiterCancelledAfterItsTurnCameIsAdmitted) {
    Fixture f;
    auto sched = f.build(Bounds{1}, OverflowPolicy::Wait);
    sched.try_submit(Task<int>(0)).value();
    auto pending = sched.try_submit(Task<int>(1)).value();
    asio::cancellation_signal cancel_first;
    std::vector<int> admitted;
    asio::co_spawn(f.io, sched.submit(Task<int>(2)),
                   asio::bind_cancellation_slot(cancel_first.slot(), [&](std::exception_ptr e, TaskHandle<int>) {
                       if (!e) admitted.push_back(2);
                   }));
    f.io.poll();
    ASSERT_TRUE(pending.cancel());                          // the turn goes to the waiter
    cancel_first.emit(asio::cancellation_type::terminal);  // too late to withdraw it
    f.io.poll();
    EXPECT_EQ(admitted, (std::vector<int>{2}));
    for (int n : {0, 2}) f.release(n);
    test::run(f.io, sched.shutdown(0s));
}
}  // namespace bounds_test
