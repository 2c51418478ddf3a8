// The driver's mutex for short critical sections (detail/light_mutex.hpp).
// Under ThreadSanitizer (the driver label) a lock that does not exclude, or
// whose unlock does not publish, is reported as a data race here.
#include <cronoq/detail/runtime/light_mutex.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace light_mutex_test {
namespace {

using cronoq::detail::LightMutex;

TEST(LightMutex, ExcludesAndPublishesAcrossContendingThreads) {
    // More threads than cores, so that lockers find it held, spin, sleep
    // and are woken: every path of the mutex is taken.
    constexpr int threads = 4;
    constexpr int rounds = 50000;
    LightMutex mu;
    std::uint64_t counter = 0;  // plain: only the mutex orders its updates
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                std::lock_guard lock(mu);
                ++counter;
            }
        });
    for (auto& t : pool) t.join();
    EXPECT_EQ(counter, std::uint64_t{threads} * rounds);
}

TEST(LightMutex, TryLockFailsWhileHeldAndSucceedsOnceReleased) {
    LightMutex mu;
    mu.lock();
    bool taken_while_held = true;
    std::thread other([&] { taken_while_held = mu.try_lock(); });
    other.join();
    EXPECT_FALSE(taken_while_held);
    mu.unlock();
    bool taken_after = false;
    std::thread again([&] {
        taken_after = mu.try_lock();
        if (taken_after) mu.unlock();
    });
    again.join();
    EXPECT_TRUE(taken_after);
}

TEST(LightMutex, ALockerBlockedOnTheHolderTakesItAfterTheUnlock) {
    LightMutex mu;
    std::atomic<bool> acquired{false};
    mu.lock();
    std::thread waiter([&] {
        mu.lock();  // held: waits for the unlock below
        acquired.store(true);
        mu.unlock();
    });
    // Whether or not the waiter has reached lock() yet, it cannot hold it.
    EXPECT_FALSE(acquired.load());
    mu.unlock();
    waiter.join();
    EXPECT_TRUE(acquired.load());
}

}  // namespace
}  // namespace light_mutex_test
