#pragma once
// The cron engine behind recurring schedules (docs/guide/time-and-cron.md), public so that users
// and tests can evaluate schedules directly.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cronoq {

/// A parsed cron expression: a value type, cheap to copy, immutable, and safe
/// to use from several threads at once.
///
/// Syntax: 5 fields `minute hour day-of-month month day-of-week`, or 6 with a
/// leading `second` field, separated by spaces or tabs. Each field is a
/// comma-separated list of items: `*`, `a`, `a-b`, `*/n`, `a-b/n` and `a/n`
/// (from `a` to the field's maximum). Month names `JAN`..`DEC` and weekday
/// names `SUN`..`SAT` are accepted in any case; weekdays 0 and 7 are both
/// Sunday; `?` means `*` in the two day fields. Macros: `@yearly`
/// (= `@annually`), `@monthly`, `@weekly`, `@daily` (= `@midnight`),
/// `@hourly`. `L`, `W` and `#` are not supported and are rejected.
///
/// Day rule (classic cron): a day field is *unrestricted* only when it is
/// exactly `*` or `?`. When both day fields are restricted, a day matching
/// either one matches; otherwise the restricted one (if any) decides.
///
/// Daylight saving (Vixie cron): the expression is a *wildcard* schedule when
/// its minute or hour field begins with `*` (`*/15 * * * *`, `0 * * * *`), and
/// *fixed-time* otherwise.
/// - Wildcard schedules follow real time: local times skipped by a
///   spring-forward gap do not occur; local times repeated by a fall-back
///   overlap occur twice, and fire in both passes.
/// - Fixed-time schedules are never lost nor doubled: every matching local
///   time inside a gap fires once, at the first instant after the gap (several
///   such times, and a match at that very instant, share one firing); a
///   matching local time inside an overlap fires once, at its first (earlier)
///   occurrence.
///
/// Time zones come from the system tz database (/usr/share/zoneinfo) through
/// Howard Hinnant's date/tz library; "UTC" is built in and needs no database.
/// After the last transition a zone's file lists (2037 in "fat" files, the
/// last rule change in "slim" ones), the POSIX rule at the end of the file
/// continues it, so daylight saving is modelled in every year.
class CronExpr {
public:
    /// Parses `text`. Throws `ConfigError` with a message naming the text and
    /// the bad field, e.g. `cron "*/0 * * * *": minute: step must be at least 1`.
    /// Never crashes on any input; every failure is a `ConfigError`.
    static CronExpr parse(std::string_view text);

    /// The first occurrence strictly after `t`, evaluated in the IANA zone
    /// `tz`; occurrences are whole seconds. Empty if there is none within 400
    /// years of `t` (`0 0 30 2 *`) or none representable as a
    /// `system_clock::time_point`. Throws `ConfigError` if `tz` is not a zone
    /// of the tz database. Walks the calendar field by field (skipping whole
    /// months, days and hours that cannot match), never minute by minute.
    [[nodiscard]] std::optional<std::chrono::system_clock::time_point> next_after(
        std::chrono::system_clock::time_point t, std::string_view tz = "UTC") const;

    /// The normalized expression: 5 fields, or 6 if it was written with
    /// seconds; macros expanded; names as numbers (weekday 7 as 0); lists
    /// sorted with runs as ranges. `parse(e.to_string()) == e`.
    [[nodiscard]] std::string to_string() const;

    /// Written with the leading seconds field (6 fields).
    [[nodiscard]] bool has_seconds() const noexcept { return has_seconds_; }
    /// The minute or hour field begins with `*` (see the daylight-saving rule).
    [[nodiscard]] bool is_wildcard() const noexcept { return minute_star_ || hour_star_; }

    /// Equal when the normalized expressions are equal.
    bool operator==(const CronExpr&) const = default;

private:
    CronExpr() = default;

    // One bit per allowed value, bit v for value v.
    std::uint64_t seconds_ = 0;        // 0-59
    std::uint64_t minutes_ = 0;        // 0-59
    std::uint32_t hours_ = 0;          // 0-23
    std::uint32_t days_of_month_ = 0;  // 1-31
    std::uint16_t months_ = 0;         // 1-12
    std::uint8_t days_of_week_ = 0;    // 0-6, Sunday = 0
    bool has_seconds_ = false;
    bool minute_star_ = false;         // minute field begins with '*'
    bool hour_star_ = false;           // hour field begins with '*'
    bool day_of_month_any_ = false;    // day-of-month field is exactly '*' or '?'
    bool day_of_week_any_ = false;     // day-of-week field is exactly '*' or '?'
};

}  // namespace cronoq
