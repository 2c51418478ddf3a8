#pragma once
// What the randomized invariant tests share: their own generator (so a seed
// gives the same calls everywhere) and the seed / length overrides:
// CRONOQ_SEED=<n> runs that seed instead of the defaults, CRONOQ_STEPS=<n>
// changes the number of calls per seed.
#include <cronoq/core/time.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace cronoq::core::test {

/// SplitMix64.
class Random {
public:
    explicit Random(std::uint64_t seed) : state_(seed * 0x2545F4914F6CDD1Dull + 0x9E3779B97F4A7C15ull) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : next() % n; }
    bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
    Duration between(Duration lo, Duration hi) {
        return lo + Duration(static_cast<Duration::rep>(below(static_cast<std::uint64_t>((hi - lo).count()) + 1)));
    }
    template <class T, std::size_t N>
    const T& pick(const std::array<T, N>& a) {
        return a[below(N)];
    }

private:
    std::uint64_t state_;
};

/// CRONOQ_SEED, or the test's default seeds.
template <std::size_t N>
std::vector<std::uint64_t> seeds_or(const std::array<std::uint64_t, N>& defaults) {
    if (const char* env = std::getenv("CRONOQ_SEED"); env && *env) return {std::strtoull(env, nullptr, 10)};
    return {defaults.begin(), defaults.end()};
}

/// CRONOQ_STEPS, or the test's default length.
inline int steps_or(int default_steps) {
    if (const char* env = std::getenv("CRONOQ_STEPS"); env && *env) return std::atoi(env);
    return default_steps;
}

/// The default seeds at full length: what coverage checks are tuned for (a
/// short run, or some other seed, may miss a rare feature).
inline bool default_run(int default_steps) {
    const char* seed = std::getenv("CRONOQ_SEED");
    return !(seed && *seed) && steps_or(default_steps) >= default_steps;
}

}  // namespace cronoq::core::test
