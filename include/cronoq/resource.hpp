#pragma once
// Shared resources (docs/guide/resources-and-bounds.md): declared once on the scheduler, used by every
// pool. A task asks for units with `Task::resource(name, amount)`.
#include <cstdint>
#include <string>
#include <utility>

namespace cronoq {

/// A named, shared limit on how much work may run at once (a semaphore) or
/// how fast work may start (a token bucket). Declared with
/// `Builder::resource(Resource)`; names are unique within a scheduler.
///
/// - `semaphore(name, permits)`: an attempt holds its units from dispatch to
///   the end of the attempt (success, failure, timeout or abort alike).
/// - `token_bucket(name, rate_per_s, burst)`: units are taken at dispatch and
///   never given back; the bucket refills continuously at `rate_per_s` up to
///   `burst` and starts full. `Scheduler::set_rate` changes the rate at run
///   time (e.g. after an HTTP 429); a rate of 0 pauses the refill.
///
/// A task that asks for more units than `capacity()` could ever grant is
/// rejected at submit with `ResourceExceedsCapacity`; a task that only has
/// to wait is parked on the resource it is short of, without blocking the
/// tasks behind it that need other resources or none.
///
/// Validated when the scheduler is built (a `ConfigError` naming the field):
/// a non-empty, unique name; `permits >= 1`; `burst >= 1`; `rate_per_s`
/// finite and `>= 0`.
struct Resource {
    enum class Kind : std::uint8_t { Semaphore, TokenBucket };

    Kind kind = Kind::Semaphore;
    std::string name;
    std::uint32_t permits = 0;  ///< semaphore: units held at once, at most
    double rate_per_s = 0.0;    ///< token bucket: units added per second
    std::uint32_t burst = 0;    ///< token bucket: units it can hold

    static Resource semaphore(std::string name, std::uint32_t permits) {
        Resource r;
        r.kind = Kind::Semaphore;
        r.name = std::move(name);
        r.permits = permits;
        return r;
    }

    static Resource token_bucket(std::string name, double rate_per_s, std::uint32_t burst) {
        Resource r;
        r.kind = Kind::TokenBucket;
        r.name = std::move(name);
        r.rate_per_s = rate_per_s;
        r.burst = burst;
        return r;
    }

    /// The most units one task can ever be granted: the permits of a
    /// semaphore, the burst of a token bucket.
    std::uint32_t capacity() const { return kind == Kind::Semaphore ? permits : burst; }
};

/// Stable lower-case names: "semaphore", "token_bucket".
constexpr const char* to_string(Resource::Kind kind) {
    return kind == Resource::Kind::Semaphore ? "semaphore" : "token_bucket";
}

}  // namespace cronoq
