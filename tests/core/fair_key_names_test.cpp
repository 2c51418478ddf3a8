// The interned fair key names of an engine (src/core/fair_keys.hpp): one id
// per name whatever its length (within a string's inline bytes or not, any
// number of 8-byte steps of the hash), the same id by the hash a submission
// took ahead, names whose buckets carry the same half of the hash told
// apart, ids reused once released, and names past 2 MiB.
#include "core/fair_keys.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace cronoq::core::detail::fair_key_names_test {
namespace {

TEST(FairKeyNames, EveryLengthGetsItsOwnIdAndTheHashTakenAheadFindsTheSame) {
    FairKeyNames names;
    std::vector<std::string> all;
    // Lengths around the hash's 8-byte steps and a string's 15 inline
    // bytes; names that differ only in their last byte, or only in length.
    for (std::size_t len = 1; len <= 40; ++len) {
        all.push_back(std::string(len, 'a'));
        all.push_back(std::string(len - 1, 'a') + 'b');
        all.push_back(std::string(len - 1, 'a') + '\0');
    }
    std::set<FairKeyId> ids;
    for (const std::string& n : all) {
        const FairKeyId id = names.hold(n, FairKeyNames::hash(n));
        EXPECT_NE(id, 0u);
        EXPECT_TRUE(ids.insert(id).second) << "a second name got the id of another: " << n.size() << " bytes";
        EXPECT_EQ(names.name(id), n);
    }
    EXPECT_EQ(names.size(), all.size());
    for (const std::string& n : all) {
        const auto found = names.find(n);
        ASSERT_TRUE(found);
        EXPECT_EQ(names.hold(n), *found);  // held twice now
    }
    EXPECT_EQ(names.size(), all.size());
}

TEST(FairKeyNames, TheEmptyNameIsIdZeroAndNeverHeld) {
    FairKeyNames names;
    EXPECT_EQ(names.hold(""), 0u);
    EXPECT_EQ(names.hold("", FairKeyNames::hash("")), 0u);
    EXPECT_EQ(names.find(""), FairKeyId{0});
    EXPECT_EQ(names.size(), 0u);
}

// A bucket keeps the low half of a name's hash only: two names sharing it
// (found by the birthday bound among generated names) are still two keys,
// each found by its own name, and releasing one leaves the other.
TEST(FairKeyNames, NamesWhoseHashesShareTheLowHalfAreTwoKeys) {
    std::unordered_map<std::uint32_t, std::string> seen;
    std::string a;
    std::string b;
    for (int i = 0; a.empty(); ++i) {
        ASSERT_LT(i, 4000000) << "no two names with the same low half found";
        std::string n = "t" + std::to_string(i);
        const auto low = static_cast<std::uint32_t>(FairKeyNames::hash(n));
        if (auto [at, added] = seen.try_emplace(low, n); !added) {
            a = at->second;
            b = std::move(n);
        }
    }
    ASSERT_NE(FairKeyNames::hash(a), FairKeyNames::hash(b));
    FairKeyNames names;
    const FairKeyId ia = names.hold(a);
    const FairKeyId ib = names.hold(b);
    EXPECT_NE(ia, ib);
    EXPECT_EQ(names.find(a), ia);
    EXPECT_EQ(names.find(b), ib);
    EXPECT_EQ(names.hold(b), ib);
    names.release(ia);
    EXPECT_FALSE(names.find(a));
    EXPECT_EQ(names.find(b), ib);
    EXPECT_EQ(names.name(ib), b);
}

// 40 000 names grow the names by id past 2 MiB (a block of huge pages).
TEST(FairKeyNames, ManyNamesAreFoundReleasedAndTheirIdsReused) {
    FairKeyNames names;
    constexpr int count = 40000;
    std::vector<FairKeyId> id(count);
    for (int i = 0; i < count; ++i) id[i] = names.hold("tenant-" + std::to_string(i));
    EXPECT_EQ(names.size(), static_cast<std::size_t>(count));
    EXPECT_EQ(std::set<FairKeyId>(id.begin(), id.end()).size(), static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) ASSERT_EQ(names.find("tenant-" + std::to_string(i)), id[i]) << i;
    for (int i = 0; i < count; i += 2) names.release(id[i]);
    EXPECT_EQ(names.size(), static_cast<std::size_t>(count / 2));
    for (int i = 0; i < count; ++i) {
        const auto found = names.find("tenant-" + std::to_string(i));
        if (i % 2 == 0) {
            EXPECT_FALSE(found) << i;
        } else {
            ASSERT_EQ(found, id[i]) << i;
        }
    }
    // A released id goes to the next new name: ids stay dense.
    const FairKeyId reused = names.hold("another");
    EXPECT_LT(reused, static_cast<FairKeyId>(count + 1));
    EXPECT_EQ(names.name(reused), "another");
}

}  // namespace
}  // namespace cronoq::core::detail::fair_key_names_test
