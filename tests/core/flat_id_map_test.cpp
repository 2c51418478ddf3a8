// The engine's id table against std::unordered_map, for the id patterns it
// meets: one engine's ids in order, several engines' ids interleaved (a
// stride), and ids far apart (a long-lived task among fresh ones).
#include "core/flat_id_map.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace flat_id_map_test {

namespace {

using cronoq::core::detail::FlatIdMap;

// Inserts `keys` in order while erasing, finding and reassigning at random
// (seeded), checking every answer against a reference map.
void check_against_reference(const std::vector<std::uint64_t>& keys, std::uint32_t seed) {
    FlatIdMap map;
    std::unordered_map<std::uint64_t, std::uint32_t> reference;
    std::vector<std::uint64_t> present;
    std::mt19937 rng(seed);
    std::uint32_t value = 0;
    for (std::uint64_t key : keys) {
        map.insert(key, ++value);
        reference[key] = value;
        present.push_back(key);
        const auto draw = rng() % 4;
        if (draw == 0 && !present.empty()) {
            const std::size_t i = rng() % present.size();
            EXPECT_TRUE(map.erase(present[i]));
            reference.erase(present[i]);
            present[i] = present.back();
            present.pop_back();
        } else if (draw == 1 && !present.empty()) {
            const std::uint64_t k = present[rng() % present.size()];
            EXPECT_TRUE(map.assign(k, ++value));
            reference[k] = value;
        }
        ASSERT_EQ(map.size(), reference.size());
    }
    for (const auto& [k, v] : reference) {
        const std::uint32_t* found = map.find(k);
        ASSERT_NE(found, nullptr) << k;
        EXPECT_EQ(*found, v) << k;
    }
    // Every erased key is absent, and so are 0 and a key never inserted.
    for (std::uint64_t k : keys)
        if (!reference.count(k)) {
            EXPECT_EQ(map.find(k), nullptr) << k;
        }
    EXPECT_EQ(map.find(0), nullptr);
    EXPECT_FALSE(map.erase(std::uint64_t{1} << 63));
    // Emptied in insertion order (as retention forgets tasks).
    for (std::uint64_t k : keys)
        if (reference.erase(k)) {
            EXPECT_TRUE(map.erase(k));
        }
    EXPECT_EQ(map.size(), 0u);
}

TEST(FlatIdMap, SequentialIds) {
    std::vector<std::uint64_t> keys;
    for (std::uint64_t k = 1; k <= 20000; ++k) keys.push_back(k);
    check_against_reference(keys, 1);
}

TEST(FlatIdMap, InterleavedEnginesLeaveStridedIds) {
    for (std::uint64_t stride : {2u, 3u, 4u, 8u, 16u, 64u}) {
        std::vector<std::uint64_t> keys;
        for (std::uint64_t k = 5; keys.size() < 20000; k += stride) keys.push_back(k);
        check_against_reference(keys, static_cast<std::uint32_t>(stride));
    }
}

TEST(FlatIdMap, IdsFarApart) {
    std::vector<std::uint64_t> keys;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20000; ++i) keys.push_back(std::max<std::uint64_t>(1, rng() >> (i % 3 == 0 ? 1 : 40)));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::shuffle(keys.begin(), keys.end(), rng);
    check_against_reference(keys, 3);
}

}  // namespace
}  // namespace flat_id_map_test
