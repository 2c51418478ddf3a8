// The flag every awaitable wait in the driver rests on (detail/wait_list.hpp):
// its first waiter kept inline, the others in a list of their own, each
// removable by its own cancellation.
#include <cronoq/detail/wait_list.hpp>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <system_error>
#include <vector>

namespace wait_list_test {
namespace {

using cronoq::detail::WaitList;

// A wait with its own cancellation signal; `result` holds its completion.
struct Waiting {
    asio::cancellation_signal signal;
    std::optional<std::error_code> result;
};

// Runs what is ready; restarted first, since a context that ran out of work
// stays stopped.
std::size_t run_ready(asio::io_context& io) {
    io.restart();
    return io.poll();
}

void wait_on(const std::shared_ptr<WaitList>& list, Waiting& w, asio::io_context& io) {
    list->async_wait(asio::bind_cancellation_slot(
        w.signal.slot(), asio::bind_executor(io, [&w](std::error_code ec) { w.result = ec; })));
}

TEST(WaitList, SetCompletesTheInlineWaiterAndEveryOtherOnce) {
    asio::io_context io;
    auto list = WaitList::create();
    std::vector<Waiting> waits(4);
    for (auto& w : waits) wait_on(list, w, io);
    run_ready(io);
    for (auto& w : waits) EXPECT_FALSE(w.result);  // not set: nobody completes
    list->set();
    run_ready(io);
    for (auto& w : waits) {
        ASSERT_TRUE(w.result);
        EXPECT_FALSE(*w.result);
    }
    list->set();  // no waiter left: nothing runs twice
    EXPECT_EQ(run_ready(io), 0u);
}

TEST(WaitList, CancellingOneWaiterEndsOnlyItsWaitWhereverItIsKept) {
    asio::io_context io;
    auto list = WaitList::create();
    std::vector<Waiting> waits(3);
    for (auto& w : waits) wait_on(list, w, io);
    // The first (inline) and the last (in the list) leave; the middle stays.
    waits[0].signal.emit(asio::cancellation_type::terminal);
    waits[2].signal.emit(asio::cancellation_type::terminal);
    run_ready(io);
    ASSERT_TRUE(waits[0].result);
    EXPECT_EQ(*waits[0].result, asio::error::operation_aborted);
    ASSERT_TRUE(waits[2].result);
    EXPECT_EQ(*waits[2].result, asio::error::operation_aborted);
    EXPECT_FALSE(waits[1].result);
    list->set();
    run_ready(io);
    ASSERT_TRUE(waits[1].result);
    EXPECT_FALSE(*waits[1].result);
}

TEST(WaitList, AWaitAfterSetCompletesAtOnceAndResetMakesItWaitAgain) {
    asio::io_context io;
    auto list = WaitList::create();
    list->set();
    Waiting early;
    wait_on(list, early, io);
    run_ready(io);
    ASSERT_TRUE(early.result);
    EXPECT_FALSE(*early.result);

    list->reset();
    // The inline place freed by the cancelled waiter takes the next one.
    Waiting cancelled, later, last;
    wait_on(list, cancelled, io);
    wait_on(list, later, io);
    cancelled.signal.emit(asio::cancellation_type::terminal);
    wait_on(list, last, io);
    run_ready(io);
    EXPECT_FALSE(later.result);
    EXPECT_FALSE(last.result);
    list->set();
    run_ready(io);
    ASSERT_TRUE(later.result);
    ASSERT_TRUE(last.result);
    EXPECT_FALSE(*later.result);
    EXPECT_FALSE(*last.result);
    EXPECT_EQ(*cancelled.result, asio::error::operation_aborted);
}

}  // namespace
}  // namespace wait_list_test
