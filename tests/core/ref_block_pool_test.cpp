// The pool of the fair keys' rings (src/core/ref_block_pool.hpp) and the
// ring on it (src/core/ref_ring.hpp).
#include "core/ref_block_pool.hpp"
#include "core/ref_ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace cronoq::core::detail {
namespace {

struct Held {
    QueueRef* at;
    std::uint32_t refs;
    std::uint32_t mark;
};

void fill(const Held& h) {
    for (std::uint32_t i = 0; i < h.refs; ++i) h.at[i] = QueueRef{h.mark, i};
}
bool intact(const Held& h) {
    for (std::uint32_t i = 0; i < h.refs; ++i)
        if (h.at[i].slot != h.mark || h.at[i].gen != i) return false;
    return true;
}
// No two held blocks share a byte.
void expect_disjoint(std::vector<Held> held) {
    std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.at < b.at; });
    for (std::size_t i = 1; i < held.size(); ++i)
        EXPECT_LE(held[i - 1].at + held[i - 1].refs, held[i].at) << "blocks " << held[i - 1].mark << " and " << held[i].mark;
}

TEST(RefBlockPool, AGivenBlockIsTheNextOfItsSize) {
    RefBlockPool pool;
    QueueRef* a = pool.take(8);
    QueueRef* a_buddy = pool.take(8);  // held: `a` cannot merge
    QueueRef* b = pool.take(16);
    QueueRef* b_buddy = pool.take(16);
    pool.give(a, 8);
    pool.give(b, 16);
    EXPECT_EQ(pool.take(16), b);
    EXPECT_EQ(pool.take(8), a);
    for (const QueueRef* p : {a, a_buddy, b, b_buddy}) EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % cache_line_bytes, 0u);
}

TEST(RefBlockPool, FreedBuddiesMergeIntoTheLargerBlocksOfGrowingRings) {
    RefBlockPool pool;
    std::vector<QueueRef*> lines;
    for (std::size_t i = 0; i < RefBlockPool::first_chunk_bytes / cache_line_bytes; ++i) lines.push_back(pool.take(8));
    ASSERT_EQ(pool.chunk_bytes(), RefBlockPool::first_chunk_bytes);
    QueueRef* first = *std::min_element(lines.begin(), lines.end());
    std::shuffle(lines.begin(), lines.end(), std::mt19937(3));
    for (QueueRef* p : lines) pool.give(p, 8);
    // The chunk is one free block again: its whole size needs no new chunk.
    EXPECT_EQ(pool.take(RefBlockPool::first_chunk_bytes / sizeof(QueueRef)), first);
    EXPECT_EQ(pool.chunk_bytes(), RefBlockPool::first_chunk_bytes);
}

TEST(RefBlockPool, ChunksGrowGeometricallyToHugePagesAndLargeBlocksStayOut) {
    RefBlockPool pool;
    EXPECT_EQ(pool.chunk_bytes(), 0u);
    pool.take(8);
    EXPECT_EQ(pool.chunk_bytes(), RefBlockPool::first_chunk_bytes);
    const std::uint32_t large = 2 * RefBlockPool::max_pooled;  // its own allocation
    QueueRef* big = pool.take(large);
    EXPECT_EQ(pool.chunk_bytes(), RefBlockPool::first_chunk_bytes);
    pool.give(big, large);
    std::vector<std::size_t> totals{pool.chunk_bytes()};
    while (pool.chunk_bytes() < 6 * huge_page_bytes) {
        pool.take(16);
        if (pool.chunk_bytes() != totals.back()) totals.push_back(pool.chunk_bytes());
    }
    // 4, 8, 16 ... KiB while under 1 MiB (each chunk as large as the
    // pool), then 2 MiB each.
    for (std::size_t i = 1; i < totals.size(); ++i) {
        const std::size_t chunk = totals[i] - totals[i - 1];
        if (totals[i - 1] >= RefBlockPool::huge_from_bytes)
            EXPECT_EQ(chunk, huge_page_bytes);
        else
            EXPECT_EQ(chunk, std::max(RefBlockPool::first_chunk_bytes, totals[i - 1]));
    }
    EXPECT_GE(totals.size(), 10u);
}

TEST(RefBlockPool, BlocksHeldAtOnceNeverOverlap) {
    RefBlockPool pool;
    std::mt19937 rng(7);
    std::vector<Held> held;
    std::uint32_t mark = 0;
    for (int step = 0; step < 20000; ++step) {
        if (!held.empty() && rng() % 3 == 0) {
            const std::size_t i = rng() % held.size();
            ASSERT_TRUE(intact(held[i])) << "block " << held[i].mark << " was written over";
            pool.give(held[i].at, held[i].refs);
            held[i] = held.back();
            held.pop_back();
            continue;
        }
        const std::uint32_t refs = std::uint32_t{8} << (rng() % 6);  // 8 to 256
        held.push_back(Held{pool.take(refs), refs, mark++});
        fill(held.back());
    }
    for (const Held& h : held) EXPECT_TRUE(intact(h)) << "block " << h.mark << " was written over";
    expect_disjoint(held);
    for (const Held& h : held) pool.give(h.at, h.refs);
}

TEST(RefRing, GrowsAndShrinksThroughThePoolInOrder) {
    RefBlockPool pool;
    RefRing ring;
    EXPECT_EQ(ring.capacity(), 0u);
    std::uint32_t next_in = 0, next_out = 0;
    // Pushes and pops wrap the ring around at every size it passes.
    for (std::uint32_t round = 0; round < 6; ++round) {
        for (std::uint32_t i = 0; i < (8u << round); ++i) ring.push_back(pool, QueueRef{next_in++, 1});
        for (std::uint32_t i = 0; i < (4u << round); ++i) {
            ASSERT_EQ(ring.front().slot, next_out++);
            ring.pop_front();
        }
    }
    EXPECT_EQ(ring.size(), next_in - next_out);
    EXPECT_EQ(ring.capacity(), 512u);
    for (std::uint32_t i = 0; i < ring.size(); ++i) EXPECT_EQ(ring[i].slot, next_out + i);
    // Its storage goes back, merged with what it outgrew: no new chunk
    // for a block of its size.
    const std::size_t chunks = pool.chunk_bytes();
    ring.release(pool);
    EXPECT_EQ(ring.capacity(), 0u);
    EXPECT_TRUE(ring.empty());
    QueueRef* again512 = pool.take(512);
    EXPECT_EQ(pool.chunk_bytes(), chunks);
    pool.give(again512, 512);

    // A small ring given back leaves its block to the next ring.
    RefRing small;
    small.push_back(pool, QueueRef{1, 1});
    const QueueRef* block = small.data();
    small.release(pool);
    RefRing again;
    again.push_back(pool, QueueRef{2, 2});
    EXPECT_EQ(again.data(), block);
    EXPECT_EQ(again.front().slot, 2u);
    again.release(pool);
}

TEST(RefRing, RingsSharingAPoolKeepTheirOwnRefs) {
    RefBlockPool pool;
    std::vector<RefRing> rings(300);
    std::mt19937 rng(11);
    std::vector<std::uint32_t> in(rings.size()), out(rings.size());
    for (int step = 0; step < 60000; ++step) {
        const std::size_t r = rng() % rings.size();
        const auto key = static_cast<std::uint32_t>(r);
        if (rng() % 5 < 3) {
            rings[r].push_back(pool, QueueRef{key, in[r]++});
        } else if (!rings[r].empty()) {
            ASSERT_EQ(rings[r].front().slot, key);
            ASSERT_EQ(rings[r].front().gen, out[r]++);
            rings[r].pop_front();
            // An emptied ring past the small sizes hands its storage back.
            if (rings[r].empty() && rings[r].capacity() > 16) rings[r].release(pool);
        }
    }
    for (std::size_t r = 0; r < rings.size(); ++r) {
        ASSERT_EQ(rings[r].size(), in[r] - out[r]);
        for (std::uint32_t i = 0; i < rings[r].size(); ++i) {
            EXPECT_EQ(rings[r][i].slot, r);
            EXPECT_EQ(rings[r][i].gen, out[r] + i);
        }
        rings[r].release(pool);
    }
}

}  // namespace
}  // namespace cronoq::core::detail
