// Shared resources (docs/guide/resources-and-bounds.md): semaphores, token buckets under virtual time,
// all-or-nothing acquisition and the submit-time checks.
#include <cronoq/resource.hpp>  // first: the public header compiles on its own

#include "core/backoff.hpp"  // detail::Rng, a seeded generator
#include "core/resource_registry.hpp"
#include "core/token_bucket.hpp"

#include <cronoq/config_error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

namespace cronoq::core::detail::resource_test {
namespace {

using namespace std::chrono_literals;

constexpr Time t0{};
constexpr Duration one_ns{1};

TEST(Semaphore, OfTwoNeverHasThreeHolders) {
    ResourceRegistry registry;
    const ResourceId db = registry.add(Resource::semaphore("db", 2), t0);
    Rng rng(7);
    std::uint32_t holders = 0;
    int refused = 0;
    for (int i = 0; i < 10'000; ++i) {
        if (rng.next() % 2 == 0) {
            const bool got = registry.try_acquire(db, 1, t0);
            EXPECT_EQ(got, holders < 2) << "step " << i;
            if (got) ++holders;
            refused += got ? 0 : 1;
        } else if (holders > 0) {
            EXPECT_TRUE(registry.release(db, 1));
            --holders;
        }
        ASSERT_LE(registry.held(db), 2u);
        ASSERT_EQ(registry.held(db), holders);
        ASSERT_EQ(registry.available(db, t0), 2u - holders);
    }
    EXPECT_GT(refused, 0);  // the limit was actually reached
}

TEST(Semaphore, OverReleaseIsReportedAndStopsAtZero) {
    ResourceRegistry registry;
    const ResourceId db = registry.add(Resource::semaphore("db", 3), t0);
    ASSERT_TRUE(registry.try_acquire(db, 2, t0));
    EXPECT_FALSE(registry.release(db, 5));
    EXPECT_EQ(registry.held(db), 0u);
    EXPECT_EQ(registry.available(db, t0), 3u);
}

TEST(TokenBucket, Rate2Burst3YieldsThreeAtOnceThenOneEveryHalfSecond) {
    TokenBucket bucket(2.0, 3, t0);
    EXPECT_DOUBLE_EQ(bucket.tokens_at(t0), 3.0);  // starts full
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(bucket.try_take(1, t0));
    EXPECT_FALSE(bucket.try_take(1, t0));

    // Then one every 500 000 000 ns exactly, for a long run: no drift.
    Time now = t0;
    for (int k = 1; k <= 10'000; ++k) {
        const auto at = bucket.next_available(1, now);
        ASSERT_EQ(at, t0 + k * 500ms) << "token " << k;
        ASSERT_FALSE(bucket.try_take(1, *at - one_ns)) << "token " << k;
        ASSERT_TRUE(bucket.try_take(1, *at)) << "token " << k;
        now = *at;
    }
}

TEST(TokenBucket, NonIntegralPeriodDoesNotDrift) {
    // 3 per second: token k is due at ceil(k x 10^9 / 3) ns, for every k,
    // over hours (past the re-basing of the reference). Burst 2, so that
    // the bucket is never full when a token is taken (a full one would
    // lose the fraction of a nanosecond it was full for).
    TokenBucket bucket(3.0, 2, t0);
    ASSERT_TRUE(bucket.try_take(2, t0));
    Time now = t0;
    for (std::int64_t k = 1; k <= 30'000; ++k) {
        const auto at = bucket.next_available(1, now);
        const Duration due((k * 1'000'000'000 + 2) / 3);
        ASSERT_EQ(at, t0 + due) << "token " << k;
        ASSERT_TRUE(bucket.try_take(1, *at));
        now = *at;
    }
}

TEST(TokenBucket, FullBucketLosesWhatItWouldAccrue) {
    // Burst 1 at 3/s: the token is complete at 333 333 333.3 ns, taken at
    // the next whole nanosecond; the bucket was full meanwhile, so the
    // next token starts from the take.
    TokenBucket bucket(3.0, 1, t0);
    ASSERT_TRUE(bucket.try_take(1, t0));
    Time now = t0;
    for (int k = 1; k <= 3; ++k) {
        const auto at = bucket.next_available(1, now);
        ASSERT_EQ(at, now + Duration(333'333'334));
        ASSERT_TRUE(bucket.try_take(1, *at));
        now = *at;
    }
}

TEST(TokenBucket, RefillStopsAtBurst) {
    TokenBucket bucket(2.0, 3, t0);
    ASSERT_TRUE(bucket.try_take(3, t0));
    EXPECT_DOUBLE_EQ(bucket.tokens_at(t0 + 250ms), 0.5);
    EXPECT_DOUBLE_EQ(bucket.tokens_at(t0 + 1h), 3.0);
    // What accrued beyond the burst is lost: after a long idle, three at
    // once, then the fourth half a second later.
    const Time later = t0 + 1h;
    EXPECT_TRUE(bucket.try_take(3, later));
    EXPECT_EQ(bucket.next_available(1, later), later + 500ms);
}

TEST(TokenBucket, SetRateTakesEffectFromNow) {
    TokenBucket bucket(2.0, 1, t0);
    ASSERT_TRUE(bucket.try_take(1, t0));
    EXPECT_EQ(bucket.next_available(1, t0), t0 + 500ms);
    // Half a token accrued at the old rate by 250 ms; the other half at the
    // new rate of 1/s takes 500 ms more.
    bucket.set_rate(1.0, t0 + 250ms);
    EXPECT_DOUBLE_EQ(bucket.tokens_at(t0 + 250ms), 0.5);
    EXPECT_EQ(bucket.next_available(1, t0 + 250ms), t0 + 750ms);
    EXPECT_FALSE(bucket.try_take(1, t0 + 500ms));
    EXPECT_TRUE(bucket.try_take(1, t0 + 750ms));
    EXPECT_EQ(bucket.next_available(1, t0 + 750ms), t0 + 1750ms);
}

TEST(TokenBucket, RateZeroPausesUntilTheRateIsRaised) {
    TokenBucket bucket(4.0, 2, t0);
    ASSERT_TRUE(bucket.try_take(2, t0));
    bucket.set_rate(0.0, t0 + 125ms);  // after a 429: half a token so far
    EXPECT_EQ(bucket.next_available(1, t0 + 125ms), std::nullopt);
    EXPECT_DOUBLE_EQ(bucket.tokens_at(t0 + 1h), 0.5);
    bucket.set_rate(4.0, t0 + 1h);
    EXPECT_EQ(bucket.next_available(1, t0 + 1h), t0 + 1h + 125ms);
}

TEST(TokenBucket, NeverForMoreThanTheBurst) {
    TokenBucket bucket(2.0, 3, t0);
    EXPECT_EQ(bucket.next_available(4, t0), std::nullopt);
    EXPECT_FALSE(bucket.try_take(4, t0));
    // Not even after a long idle, when the uncapped level would be 7 200.
    EXPECT_EQ(bucket.next_available(4, t0 + 1h), std::nullopt);
    EXPECT_FALSE(bucket.try_take(4, t0 + 1h));
    EXPECT_EQ(bucket.next_available(0, t0 + 2h), t0 + 2h);  // asking for nothing: now
    EXPECT_TRUE(bucket.try_take(0, t0 + 2h));
}

TEST(TokenBucket, StaysExactOverHoursOfSteadyUse) {
    // Past the re-basing threshold (about 18 minutes) the level is carried
    // over; tokens keep arriving on the exact grid.
    TokenBucket bucket(10.0, 5, t0);
    ASSERT_TRUE(bucket.try_take(5, t0));
    Time now = t0;
    for (int k = 1; k <= 3 * 3600 * 10; ++k) {
        const auto at = bucket.next_available(1, now);
        ASSERT_EQ(at, t0 + k * 100ms) << "token " << k;
        ASSERT_TRUE(bucket.try_take(1, *at));
        now = *at;
    }
}

TEST(TokenBucket, RandomUseNeverBeatsTheRateAndWakeupsAreExact) {
    // Random takes and rate changes at random times. Invariants: no more is
    // taken than the burst plus what the rates in force allowed; the level
    // stays within [0, burst]; and whenever next_available names a time,
    // a take succeeds there and fails a nanosecond before.
    Rng rng(99);
    double rate = 2.5;
    TokenBucket bucket(rate, 4, t0);
    Time now = t0;
    double allowance = 4;
    std::uint64_t taken = 0;
    for (int i = 0; i < 20'000; ++i) {
        const Duration step(static_cast<Duration::rep>(rng.unit() * 1e9));
        allowance += rate * to_seconds(step);
        now += step;
        const auto n = static_cast<std::uint32_t>(1 + rng.next() % 4);
        if (rng.next() % 8 == 0) {
            rate = std::floor(rng.unit() * 32) / 4;  // 0 to 7.75, some not whole
            bucket.set_rate(rate, now);
        } else {
            if (const auto at = bucket.next_available(n, now)) {
                ASSERT_GE(*at, now);
                TokenBucket at_time = bucket;
                ASSERT_TRUE(at_time.try_take(n, *at)) << "step " << i;
                if (*at > now) {
                    TokenBucket early = bucket;
                    ASSERT_FALSE(early.try_take(n, *at - one_ns)) << "step " << i;
                }
            }
            if (bucket.try_take(n, now)) taken += n;
        }
        ASSERT_LE(static_cast<double>(taken), allowance + 1e-6) << "step " << i;
        ASSERT_GE(bucket.tokens_at(now), 0.0);
        ASSERT_LE(bucket.tokens_at(now), 4.0);
    }
    EXPECT_GT(taken, 10'000u);  // the bucket was used, not just refused
}

// One registry used by the acquisition tests: two semaphores and a bucket.
struct Resources {
    ResourceRegistry registry;
    ResourceId db = registry.add(Resource::semaphore("db", 2), t0);
    ResourceId api = registry.add(Resource::token_bucket("api", 1.0, 2), t0);
    ResourceId gpu = registry.add(Resource::semaphore("gpu", 1), t0);
};

TEST(ResourceRegistry, AllOrNothingOverSeveralResources) {
    Resources r;
    const std::vector<Need> job{{r.db, 1}, {r.api, 2}, {r.gpu, 1}};
    ASSERT_TRUE(r.registry.try_acquire_all(job, t0));
    EXPECT_EQ(r.registry.held(r.db), 1u);
    EXPECT_EQ(r.registry.available(r.api, t0), 0u);
    EXPECT_EQ(r.registry.held(r.gpu), 1u);

    // db has a permit left, but the bucket is empty: nothing is taken, and
    // the answer names the bucket and when it will hold 2 tokens.
    const std::vector<Need> db_and_api{{r.db, 1}, {r.api, 2}};
    const Acquisition no = r.registry.try_acquire_all(db_and_api, t0 + 1s);
    EXPECT_FALSE(no);
    EXPECT_EQ(no.short_of, r.api);
    EXPECT_EQ(no.retry_at, t0 + 2s);
    EXPECT_EQ(r.registry.held(r.db), 1u);
    EXPECT_DOUBLE_EQ(r.registry.tokens_at(r.api, t0 + 1s), 1.0);

    // The gpu is held: a semaphore has no retry time, it waits for a release.
    const std::vector<Need> gpu_first{{r.gpu, 1}, {r.db, 1}};
    const Acquisition busy = r.registry.try_acquire_all(gpu_first, t0 + 2s);
    EXPECT_EQ(busy.short_of, r.gpu);
    EXPECT_EQ(busy.retry_at, std::nullopt);
    EXPECT_EQ(r.registry.held(r.db), 1u);

    ASSERT_TRUE(r.registry.release_all(job));  // the bucket's tokens stay spent
    EXPECT_EQ(r.registry.held(r.db), 0u);
    EXPECT_EQ(r.registry.held(r.gpu), 0u);
    EXPECT_DOUBLE_EQ(r.registry.tokens_at(r.api, t0 + 2s), 2.0);
    EXPECT_TRUE(r.registry.try_acquire_all(db_and_api, t0 + 2s));
}

TEST(ResourceRegistry, NeedsNamingTheSameResourceAreSummed) {
    Resources r;
    ASSERT_TRUE(r.registry.try_acquire(r.db, 1, t0));
    // 1 + 1 more on a semaphore of 2 with one held: short.
    const std::vector<Need> twice{{r.db, 1}, {r.db, 1}};
    EXPECT_FALSE(r.registry.try_acquire_all(twice, t0));
    EXPECT_EQ(r.registry.held(r.db), 1u);
    ASSERT_TRUE(r.registry.release(r.db, 1));
    EXPECT_TRUE(r.registry.try_acquire_all(twice, t0));
    EXPECT_EQ(r.registry.held(r.db), 2u);
}

TEST(ResourceRegistry, ResolveChecksNamesAndCapacity) {
    Resources r;
    const std::vector<ResourceRequest> fine{{"db", 1}, {"api", 2}, {"db", 1}, {"gpu", 0}};
    auto needs = r.registry.resolve(fine);
    ASSERT_TRUE(needs.has_value()) << needs.message();
    EXPECT_EQ(needs.value(), (std::vector<Need>{{r.db, 2}, {r.api, 2}}));

    const std::vector<ResourceRequest> unknown{{"db", 1}, {"queue", 1}};
    auto missing = r.registry.resolve(unknown);
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error(), SubmitError::UnknownResource);
    EXPECT_NE(missing.message().find("\"queue\""), std::string::npos) << missing.message();

    // 2 + 1 on a semaphore of 2 can never be granted.
    const std::vector<ResourceRequest> too_much{{"db", 2}, {"db", 1}};
    auto exceeds = r.registry.resolve(too_much);
    ASSERT_FALSE(exceeds.has_value());
    EXPECT_EQ(exceeds.error(), SubmitError::ResourceExceedsCapacity);
    EXPECT_EQ(exceeds.message(), "resource \"db\": asks for 3 units, its permits are 2");

    const std::vector<ResourceRequest> over_burst{{"api", 3}};
    EXPECT_EQ(r.registry.resolve(over_burst).message(), "resource \"api\": asks for 3 units, its burst is 2");
}

TEST(ResourceRegistry, LooksUpByNameAndDenseId) {
    Resources r;
    EXPECT_EQ(r.registry.size(), 3u);
    EXPECT_EQ(r.registry.find("db"), r.db);
    EXPECT_EQ(r.registry.find("gpu"), 2u);
    EXPECT_EQ(r.registry.find("nope"), std::nullopt);
    EXPECT_EQ(r.registry.kind(r.api), Resource::Kind::TokenBucket);
    EXPECT_EQ(r.registry.declaration(r.gpu).permits, 1u);
}

TEST(ResourceRegistry, RejectsBadDeclarationsAndRates) {
    ResourceRegistry registry;
    registry.add(Resource::semaphore("db", 1), t0);
    EXPECT_THROW(registry.add(Resource::semaphore("db", 4), t0), ConfigError);
    EXPECT_THROW(registry.add(Resource::semaphore("", 4), t0), ConfigError);
    EXPECT_THROW(registry.add(Resource::semaphore("zero", 0), t0), ConfigError);
    EXPECT_THROW(registry.add(Resource::token_bucket("nan", std::nan(""), 1), t0), ConfigError);
    EXPECT_THROW(registry.add(Resource::token_bucket("inf", std::numeric_limits<double>::infinity(), 1), t0),
                 ConfigError);
    EXPECT_THROW(registry.add(Resource::token_bucket("no_burst", 1.0, 0), t0), ConfigError);
    EXPECT_EQ(registry.size(), 1u);  // nothing half-added

    const ResourceId api = registry.add(Resource::token_bucket("api", 5.0, 5), t0);
    EXPECT_EQ(registry.set_rate(api, -1.0, t0), "resource \"api\": rate_per_s must be a finite number >= 0");
    EXPECT_EQ(registry.rate(api), 5.0);
    EXPECT_EQ(registry.set_rate(0, 1.0, t0), "resource \"db\": set_rate needs a token bucket, not a semaphore");
    EXPECT_EQ(registry.set_rate(api, 0.5, t0), std::nullopt);
    EXPECT_EQ(registry.rate(api), 0.5);
}

TEST(ResourceDeclaration, KeepsWhatWasDeclared) {
    const Resource db = Resource::semaphore("db", 4);
    EXPECT_EQ(db.kind, Resource::Kind::Semaphore);
    EXPECT_EQ(db.capacity(), 4u);
    const Resource api = Resource::token_bucket("api", 2.5, 10);
    EXPECT_EQ(api.kind, Resource::Kind::TokenBucket);
    EXPECT_EQ(api.rate_per_s, 2.5);
    EXPECT_EQ(api.capacity(), 10u);
    EXPECT_STREQ(to_string(api.kind), "token_bucket");
}

}  // namespace
}  // namespace cronoq::core::detail::resource_test
