// What cronoq reads from Asio's internals (driver/runtime/asio_internals.hpp) and
// how it tells a coroutine's wait (detail/wait_list.hpp): these fail, to
// compile or to pass, if Asio moves, renames or changes what they rely on.
#include "driver/runtime/asio_internals.hpp"

#include <cronoq/detail/wait_list.hpp>

#include <asio/experimental/as_tuple.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <type_traits>

namespace asio_internals_test {
namespace {

using cronoq::detail::WaitList;
namespace internals = cronoq::detail::asio_internals;

#if !defined(ASIO_HAS_IOCP)
TEST(AsioInternals, ReadsTheConcurrencyHintAnIoContextWasMadeWith) {
    asio::io_context one(1);
    asio::io_context four(4);
    asio::io_context unsafe(ASIO_CONCURRENCY_HINT_UNSAFE);
    asio::io_context unspecified;
    EXPECT_EQ(internals::concurrency_hint(one), 1);
    EXPECT_EQ(internals::concurrency_hint(four), 4);
    EXPECT_EQ(internals::concurrency_hint(unsafe), ASIO_CONCURRENCY_HINT_UNSAFE);
    EXPECT_EQ(internals::concurrency_hint(unspecified), ASIO_CONCURRENCY_HINT_DEFAULT);
}
#endif

TEST(AsioInternals, OnlyUseAwaitableItselfMarksAWaitAsACoroutines) {
    using cronoq::detail::is_coroutine_token;
    static_assert(is_coroutine_token<asio::use_awaitable_t<>>::value);
    static_assert(is_coroutine_token<std::decay_t<decltype(asio::use_awaitable)>>::value);
    static_assert(is_coroutine_token<asio::use_awaitable_t<asio::io_context::executor_type>>::value);
    static_assert(!is_coroutine_token<std::decay_t<decltype(asio::experimental::as_tuple(asio::use_awaitable))>>::value);
    static_assert(!is_coroutine_token<asio::detached_t>::value);
    // The coroutine path relies on Asio's use_awaitable handler resuming
    // the awaiting coroutine with the wait's result.
    asio::io_context io(1);
    auto list = WaitList::create();
    bool resumed = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await list->async_wait(asio::use_awaitable);
            resumed = true;
        },
        asio::detached);
    io.poll();
    EXPECT_FALSE(resumed);
    list->set();
    io.restart();
    io.poll();
    EXPECT_TRUE(resumed);
}

}  // namespace
}  // namespace asio_internals_test
