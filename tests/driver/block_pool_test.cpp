// The recycled blocks behind task records and attempts (src/driver/runtime/block_pool.hpp).
#include "driver/runtime/block_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace cronoq::detail {
namespace {

// Counts its live instances, so that a test sees every object destroyed.
struct Counted {
    explicit Counted(std::atomic<int>& live, int v) : live_(live), value(v) { ++live_; }
    ~Counted() { --live_; }
    Counted(const Counted&) = delete;
    Counted& operator=(const Counted&) = delete;

    std::atomic<int>& live_;
    int value;
};

TEST(BlockPool, AFreedBlockIsTheNextOneGivenOut) {
    if (!recycle_blocks) GTEST_SKIP() << "under AddressSanitizer every block is a fresh allocation";
    std::atomic<int> live{0};
    OwnedPool pool(shared_block_size<Counted>);
    auto a = pool.make<Counted>(live, 1);
    const void* first = a.get();
    a.reset();
    auto b = pool.make<Counted>(live, 2);
    EXPECT_EQ(b.get(), first);
    EXPECT_EQ(b->value, 2);
    EXPECT_EQ(live.load(), 1);
}

TEST(BlockPool, KeepsAtMostItsBoundOfFreeBlocks) {
    if (!recycle_blocks) GTEST_SKIP() << "under AddressSanitizer every block is a fresh allocation";
    std::atomic<int> live{0};
    constexpr std::size_t block = shared_block_size<Counted>;
    OwnedPool pool(block, 10 * block);
    std::vector<std::shared_ptr<Counted>> made;
    for (int i = 0; i < 100; ++i) made.push_back(pool.make<Counted>(live, i));
    // The region holds 10 blocks: the first 10 made. Freed in order, the
    // first goes to the spare place, 9 onto the lists, and the 90 made
    // past the region back to the heap.
    for (std::size_t i = 0; i < made.size(); ++i) EXPECT_EQ(pool.pool().in_region(made[i].get()), i < 10) << i;
    made.clear();
    EXPECT_EQ(live.load(), 0);
    EXPECT_TRUE(pool.pool().has_spare());
    EXPECT_EQ(pool.pool().kept(), 9u);
    for (int i = 0; i < 4; ++i) made.push_back(pool.make<Counted>(live, i));
    EXPECT_FALSE(pool.pool().has_spare());
    EXPECT_EQ(pool.pool().kept(), 6u);  // four taken back out: the spare, then three
    for (const auto& m : made) EXPECT_TRUE(pool.pool().in_region(m.get()));
    made.clear();
    EXPECT_TRUE(pool.pool().has_spare());
    EXPECT_EQ(pool.pool().kept(), 9u);
}

TEST(BlockPool, ABlockAtATimeGoesBackAndForthThroughTheSparePlace) {
    if (!recycle_blocks) GTEST_SKIP() << "under AddressSanitizer every block is a fresh allocation";
    std::atomic<int> live{0};
    OwnedPool pool(shared_block_size<Counted>);
    auto a = pool.make<Counted>(live, 1);
    const void* block = a.get();
    for (int i = 0; i < 3; ++i) {
        a.reset();
        EXPECT_TRUE(pool.pool().has_spare());
        EXPECT_EQ(pool.pool().kept(), 0u);  // the lists never see it
        a = pool.make<Counted>(live, i);
        EXPECT_FALSE(pool.pool().has_spare());
        EXPECT_EQ(a.get(), block);
    }
    // A second block freed while the first waits there goes to the lists.
    auto b = pool.make<Counted>(live, 9);
    a.reset();
    b.reset();
    EXPECT_TRUE(pool.pool().has_spare());
    EXPECT_EQ(pool.pool().kept(), 1u);
    EXPECT_EQ(live.load(), 0);
}

// The kernel's flags of the mapping that holds `address` (the VmFlags line
// of /proc/self/smaps), or nothing if no mapping holds it.
std::optional<std::string> vm_flags_at(const void* address) {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    std::ifstream smaps("/proc/self/smaps");
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        std::uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream header(line);
        if (header >> std::hex >> begin >> dash >> end && dash == '-') {
            inside = a >= begin && a < end;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line.substr(8) + " ";
        }
    }
    return std::nullopt;
}

// A burst's blocks sit on huge pages; a pool's first 2 MiB do not, so that a
// scheduler with few tasks commits only the small pages it writes.
TEST(BlockPool, TheRegionAsksForHugePagesPastItsFirstTwoMiB) {
    if (!recycle_blocks) GTEST_SKIP() << "under AddressSanitizer every block is a fresh allocation";
    if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage") || !std::filesystem::exists("/proc/self/smaps"))
        GTEST_SKIP() << "no transparent huge pages here";
    std::atomic<int> live{0};
    OwnedPool pool(shared_block_size<Counted>);  // the default region: 64 MiB
    auto first = pool.make<Counted>(live, 1);    // the region's first block
    ASSERT_TRUE(pool.pool().in_region(first.get()));
    const char* far = reinterpret_cast<const char*>(first.get()) + (std::size_t{8} << 20);
    ASSERT_TRUE(pool.pool().in_region(far));
    const auto near_flags = vm_flags_at(first.get());
    const auto far_flags = vm_flags_at(far);
    ASSERT_TRUE(near_flags && far_flags);
    EXPECT_EQ(near_flags->find(" hg "), std::string::npos) << *near_flags;
    EXPECT_NE(far_flags->find(" hg "), std::string::npos) << *far_flags;
}

TEST(BlockPool, ObjectsOutliveTheirPoolsOwner) {
    std::atomic<int> live{0};
    std::vector<std::shared_ptr<Counted>> kept;
    {
        OwnedPool pool(shared_block_size<Counted>);
        for (int i = 0; i < 100; ++i) kept.push_back(pool.make<Counted>(live, i));
        kept.erase(kept.begin(), kept.begin() + 50);  // half back in the pool before its owner goes
    }
    ASSERT_EQ(live.load(), 50);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(kept[static_cast<std::size_t>(i)]->value, 50 + i);
    kept.clear();  // the last block back frees the pool (LeakSanitizer checks it)
    EXPECT_EQ(live.load(), 0);
}

TEST(BlockPool, ATypeLargerThanItsBlocksIsAllocatedApart) {
    struct Large {
        char bytes[256];
    };
    OwnedPool pool(shared_block_size<int>);
    auto large = pool.make<Large>();
    large->bytes[255] = 'x';
    EXPECT_EQ(large->bytes[255], 'x');
    auto small = pool.make<int>(7);
    EXPECT_EQ(*small, 7);
}

// One taker (as the engine's mutex makes it) and two threads dropping what it
// made, as handles and contexts are dropped on any thread.
TEST(BlockPool, BlocksFreedOnOtherThreadsComeBackToTheTaker) {
    constexpr int total = 20000;
    std::atomic<int> live{0};
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::shared_ptr<Counted>> handed;
    bool done = false;
    std::atomic<std::int64_t> sum{0};
    auto dropper = [&] {
        for (;;) {
            std::shared_ptr<Counted> c;
            {
                std::unique_lock lock(mu);
                cv.wait(lock, [&] { return done || !handed.empty(); });
                if (handed.empty()) return;
                c = std::move(handed.front());
                handed.pop_front();
            }
            sum += c->value;
        }
    };
    {
        OwnedPool pool(shared_block_size<Counted>);
        std::thread t1(dropper);
        std::thread t2(dropper);
        for (int i = 0; i < total; ++i) {
            auto c = pool.make<Counted>(live, i);
            {
                std::lock_guard lock(mu);
                handed.push_back(std::move(c));
            }
            cv.notify_one();
        }
        {
            std::lock_guard lock(mu);
            done = true;
        }
        cv.notify_all();
        t1.join();
        t2.join();
    }
    EXPECT_EQ(live.load(), 0);
    EXPECT_EQ(sum.load(), static_cast<std::int64_t>(total) * (total - 1) / 2);
}

}  // namespace
}  // namespace cronoq::detail
