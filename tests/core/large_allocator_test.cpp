// The allocator of the engine's large arrays: small blocks on a cache line,
// blocks of 2 MiB and more on a huge-page boundary (where it maps them:
// Linux, not under AddressSanitizer), and both plain memory that keeps what
// is written through growth and shrinking.
#include "core/runtime/large_allocator.hpp"
#include "core/ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace large_allocator_test {

namespace {

using cronoq::core::detail::cache_line_bytes;
using cronoq::core::detail::huge_page_bytes;
using cronoq::core::detail::LargeAllocator;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

TEST(LargeAllocator, SmallBlocksStartOnACacheLine) {
    for (std::size_t n : {1u, 3u, 100u, 4096u}) {
        std::vector<std::uint32_t, LargeAllocator<std::uint32_t>> v(n, 7);
        EXPECT_EQ(address(v.data()) % cache_line_bytes, 0u) << n;
        for (std::uint32_t x : v) ASSERT_EQ(x, 7u);
    }
}

TEST(LargeAllocator, LargeBlocksStartOnAHugePageAndKeepTheirContents) {
    using V = std::vector<std::uint64_t, LargeAllocator<std::uint64_t>>;
    V v;
    // Grows from small blocks across the threshold into mapped ones.
    const std::size_t n = 3 * huge_page_bytes / sizeof(std::uint64_t) + 5;
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(i * 3);
    EXPECT_EQ(address(v.data()) % (CRONOQ_LARGE_PAGES ? huge_page_bytes : cache_line_bytes), 0u);
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i * 3);
    // Back to a small block: the large one is unmapped, the contents stay.
    v.resize(10);
    v.shrink_to_fit();
    EXPECT_EQ(address(v.data()) % cache_line_bytes, 0u);
    for (std::uint64_t i = 0; i < 10; ++i) ASSERT_EQ(v[i], i * 3);
}

TEST(LargeAllocator, ARingGrowsThroughItInOrder) {
    cronoq::core::detail::Ring<std::uint64_t> ring;
    const std::uint64_t n = huge_page_bytes / sizeof(std::uint64_t) * 2 + 1;
    for (std::uint64_t i = 0; i < n; ++i) {
        ring.push_back(i);
        if (i % 3 == 0) ring.pop_front();  // the head moves while the ring grows
    }
    std::uint64_t expected = n - ring.size();
    while (!ring.empty()) {
        ASSERT_EQ(ring.front(), expected++);
        ring.pop_front();
    }
    EXPECT_EQ(expected, n);
}

}  // namespace

}  // namespace large_allocator_test
