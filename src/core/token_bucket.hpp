#pragma once
// A token bucket under virtual time (docs/guide/resources-and-bounds.md): refills continuously at a
// rate, holds at most `burst` tokens, starts full, hands out whole tokens.
#include <cronoq/core/time.hpp>

#include <cstdint>
#include <optional>

namespace cronoq::core::detail {

/// Exact arithmetic without drift: the level is never updated by adding up
/// small refills. It is computed from a reference point,
///
///     level(now) = min(burst, base + rate x (now - ref) - taken)
///
/// where `taken` counts the whole tokens handed out since `ref` exactly (an
/// integer). The reference moves only where the level is known exactly
/// (the bucket is full: base = burst), by whole seconds, or on a rate
/// change; so however many tokens are taken, "rate 2/s" yields one token
/// every 500 000 000 ns, and "rate 3/s" token k at ceil(k x 10^9 / 3) ns,
/// with no drift (exact for whole-number rates; others round once per
/// product, far below a nanosecond). `next_available` and `try_take` use
/// the same formula, so a take at the time `next_available` named
/// succeeds, and one a nanosecond earlier fails.
///
/// A full bucket loses what it would accrue: with burst 1, a token taken
/// a fraction of a nanosecond after it was complete starts the next one
/// from the take, as a real bucket would.
///
/// Every call takes `now`, which never goes backwards: a `now` earlier than
/// the bucket's reference point (its creation, the last take from a full
/// bucket, the last rate change) is read as that point.
class TokenBucket {
public:
    /// Full at `now`. Preconditions (checked by check_resource): `rate_per_s`
    /// finite and >= 0, `burst >= 1`.
    TokenBucket(double rate_per_s, std::uint32_t burst, Time now);

    /// Tokens in the bucket at `now`, fractional, in [0, burst].
    double tokens_at(Time now) const;

    /// Takes `n` whole tokens if they are there at `now`; else takes
    /// nothing and returns false. `n == 0` always succeeds.
    bool try_take(std::uint32_t n, Time now);

    /// The earliest time >= `now` at which `n` tokens will be there if no
    /// one else takes any: `now` if they already are. Empty when that never
    /// happens: `n > burst`, or the rate is 0 and the bucket is short, or
    /// the time lies beyond the end of the time axis.
    std::optional<Time> next_available(std::uint32_t n, Time now) const;

    /// From `now` on, refills at `rate_per_s` (>= 0, finite); tokens accrued
    /// at the old rate up to `now` are kept.
    void set_rate(double rate_per_s, Time now);

    double rate() const { return rate_; }
    std::uint32_t burst() const { return burst_; }

private:
    /// Tokens accrued at the current rate over `elapsed`.
    double accrued(Duration elapsed) const;
    /// The level without the cap at `burst`. Reading it past the moment
    /// the bucket filled is harmless: every change of state re-bases first.
    double uncapped(Time now) const;
    /// Moves the reference to `now` when the bucket is full there (the
    /// excess is lost, the level is exactly `burst`), or by whole seconds
    /// when the reference is so old that the products lose precision.
    void rebase(Time now);
    Time clamp(Time now) const { return now < ref_ ? ref_ : now; }

    double rate_;            // tokens per second
    std::uint32_t burst_;
    Time ref_;               // the reference point
    double base_;            // level at ref_ (exactly burst_ unless the rate changed)
    std::uint64_t taken_ = 0;  // whole tokens taken since ref_
};

}  // namespace cronoq::core::detail
