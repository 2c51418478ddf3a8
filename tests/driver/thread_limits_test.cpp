// Threads that cannot start, and shutdown from several threads at once:
// clear errors instead of std::terminate, no hang, no race.
#include "driver_harness.hpp"

#include <gtest/gtest.h>

#include <asio/experimental/as_tuple.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <pthread.h>
#include <sys/resource.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace thread_limits_test {

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

using Blocking = BlockingScheduler<int, int>;

// This process's address space in bytes (VmSize), or 0 if unknown.
rlim_t address_space_in_use() {
    std::ifstream status("/proc/self/status");
    std::string key;
    while (status >> key) {
        if (key == "VmSize:") {
            rlim_t kib = 0;
            status >> kib;
            return kib * 1024;
        }
        status.ignore(1 << 20, '\n');
    }
    return 0;
}

// While it lives, the address space may grow by only `headroom` bytes:
// enough for small allocations, too little for a new thread's stack. New
// threads get a 64 MiB stack meanwhile, so that the stacks the C library
// keeps from threads that already ended cannot be reused. Restores both.
class AddressSpaceLimit {
public:
    explicit AddressSpaceLimit(rlim_t headroom) {
        if (pthread_getattr_default_np(&saved_attr_) != 0) throw std::runtime_error("pthread_getattr_default_np");
        pthread_attr_t big;
        pthread_attr_init(&big);
        pthread_attr_setstacksize(&big, 64 << 20);
        const int set = pthread_setattr_default_np(&big);
        pthread_attr_destroy(&big);
        if (set != 0) throw std::runtime_error("pthread_setattr_default_np");
        if (getrlimit(RLIMIT_AS, &saved_) != 0) throw std::runtime_error("getrlimit");
        const rlim_t used = address_space_in_use();
        if (used == 0) throw std::runtime_error("no VmSize in /proc/self/status");
        rlimit lowered = saved_;
        lowered.rlim_cur = used + headroom;
        if (setrlimit(RLIMIT_AS, &lowered) != 0) throw std::runtime_error("setrlimit");
    }
    ~AddressSpaceLimit() {
        setrlimit(RLIMIT_AS, &saved_);
        pthread_setattr_default_np(&saved_attr_);
        pthread_attr_destroy(&saved_attr_);
    }
    AddressSpaceLimit(const AddressSpaceLimit&) = delete;
    AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

private:
    rlimit saved_{};
    pthread_attr_t saved_attr_{};
};

constexpr rlim_t kHeadroom = 2 << 20;

Pool<int, int> echo_pool() {
    return Pool<int, int>("p").workers(1, 2, 2).executor_fn(
        [](TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<Result<int>> { co_return *x; });
}

}  // namespace

TEST(ThreadLimits, BlockingSchedulerBuildThrowsConfigErrorWhenThreadsCannotStart) {
    std::string message;
    {
        AddressSpaceLimit limit(kHeadroom);
        try {
            auto sched = Blocking::builder().threads(4).pool(echo_pool()).build();
            ADD_FAILURE() << "build() must fail when no io_context thread can start";
        } catch (const ConfigError& e) {
            message = e.what();
        }
    }
    EXPECT_NE(message.find("threads"), std::string::npos) << message;
    // The limit gone, the same configuration builds and runs.
    auto sched = Blocking::builder().threads(4).pool(echo_pool()).build();
    EXPECT_EQ(*sched.submit(Task<int>(7)).get(), 7);
}

TEST(ThreadLimits, OffloadFailsTheAttemptRetryablyWhenTheBlockingPoolCannotStart) {
    asio::io_context io;
    auto sched = Scheduler<int, int>::builder()
                     .blocking_threads(2)
                     .pool(Pool<int, int>("p").retry(RetryPolicy::none()).executor_fn(
                         [](TaskContext, std::shared_ptr<const int> x) -> Result<int> { return *x * 2; }))
                     .build(io.get_executor());
    auto failed = sched.try_submit(Task<int>(1)).value();
    {
        AddressSpaceLimit limit(kHeadroom);
        io.run();  // the plain executor offloads: the pool's threads cannot start
    }
    EXPECT_EQ(failed.status(), TaskStatus::DeadLettered) << "a retryable failure on the only attempt";
    try {
        test::run(io, failed.result());
        FAIL() << "result() of a failed attempt must throw";
    } catch (const TaskFailure& f) {
        EXPECT_NE(std::string(f.what()).find("blocking thread pool"), std::string::npos) << f.what();
    }
    // The limit gone, the next offload starts the pool.
    auto ok = sched.try_submit(Task<int>(21)).value();
    EXPECT_EQ(*test::run(io, ok.result()), 42);
    test::run(io, sched.shutdown(0s));
}

TEST(ThreadLimits, ThreadCountsAreValidated) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1} << 20}) {
        try {
            auto sched = Blocking::builder().threads(n).pool(echo_pool()).build();
            ADD_FAILURE() << "threads(" << n << ") must be rejected";
        } catch (const ConfigError& e) {
            EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
        }
    }
}

TEST(ThreadLimits, ShutdownFromSeveralThreadsAtOnceAndTheDestructorRacingIt) {
    for (int round = 0; round < 20; ++round) {
        auto sched = std::make_shared<Blocking>(Blocking::builder().threads(2).pool(echo_pool()).build());
        auto running = sched->submit(Task<int>(round));
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (int i = 0; i < 3; ++i)
            threads.emplace_back([&go, sched] {
                while (!go.load()) std::this_thread::yield();
                sched->shutdown(1s);
            });
        // The destructor (another shutdown) runs on whichever thread drops
        // the last copy, while the others may still be shutting down.
        threads.emplace_back([&go, copy = sched]() mutable {
            while (!go.load()) std::this_thread::yield();
            copy.reset();
        });
        sched.reset();
        go.store(true);
        for (auto& t : threads) t.join();
        EXPECT_TRUE(is_terminal(running.status()));
    }
}

TEST(ThreadLimits, BlockingShutdownReturnsDespiteAnExecutorThatIgnoresCancellation) {
    auto ticks = std::make_shared<std::atomic<int>>(0);
    auto sched = Blocking::builder()
                     .abandon_after(10ms)
                     .pool(Pool<int, int>("p").executor_fn(
                         [ticks](TaskContext, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             co_await asio::this_coro::throw_if_cancelled(false);
                             asio::steady_timer timer(co_await asio::this_coro::executor);
                             for (;;) {  // deaf: every aborted wait is just waited again
                                 timer.expires_after(1ms);
                                 auto wait = timer.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
                                 co_await std::move(wait);
                                 ticks->fetch_add(1);
                             }
                         }))
                     .build();
    auto h = sched.submit(Task<int>(1));
    while (ticks->load() == 0) std::this_thread::yield();  // it runs
    sched.shutdown(0s);  // returns: the attempt is abandoned, the io_context stopped
    EXPECT_EQ(h.status(), TaskStatus::Cancelled);
}
}  // namespace thread_limits_test
