// The interned fair key names of an engine (src/core/fair_keys.hpp): one id
// per name whatever its length (inline in its bucket or not, any number of
// 8-byte steps of the hash), the same id by the hash a submission took
// ahead, ids reused once released, and a table past 2 MiB.
#include "core/fair_keys.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace cronoq::core::detail::fair_key_names_test {
namespace {

TEST(FairKeyNames, EveryLengthGetsItsOwnIdAndTheHashTakenAheadFindsTheSame) {
    FairKeyNames names;
    std::vector<std::string> all;
    // Lengths around the hash's 8-byte steps and the bucket's 19 inline
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

// 40 000 names grow the table past 2 MiB (a block of huge pages).
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
