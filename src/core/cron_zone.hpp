#pragma once
// The UTC offset of an IANA time zone over time, for the cron engine.
//
// date/tz (built with USE_OS_TZDB) reads the transitions listed in the
// system's TZif files but not the POSIX rule in their footer, so after the
// last listed transition it keeps the last offset forever: 2037 for "fat"
// files, and as early as the zone's last rule change (2007 for New York) for
// "slim" ones. ZoneHistory continues such zones with the footer rule.
#include <date/tz.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace cronoq::core::detail {

using SysSeconds = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;

/// A span of real time with one UTC offset (local = UTC + offset).
struct ZoneSegment {
    SysSeconds begin;
    SysSeconds end;
    std::chrono::seconds offset;
};

/// A POSIX TZ rule with daylight saving, as in the footer of a TZif file:
/// `EST5EDT,M3.2.0,M11.1.0`, `<+1030>-10:30<+11>-11,M10.1.0,M4.1.0`,
/// `<-02>2<-01>,M3.5.0/-1,M10.5.0/0` (RFC 8536 §3.3: rule times from -167 to
/// 167 hours).
class PosixZoneRule {
public:
    /// Empty if `text` is malformed or has no daylight-saving rule (a fixed
    /// offset needs no rule: the listed transitions already say it).
    static std::optional<PosixZoneRule> parse(std::string_view text);

    /// The segment containing `t`.
    ZoneSegment segment_at(SysSeconds t) const;

    /// When a rule fires in a year: a date plus a time of day (local time,
    /// standard time for the start rule and daylight time for the end rule).
    struct When {
        enum class Kind { Julian, ZeroBasedDay, MonthWeekDay };
        Kind kind = Kind::MonthWeekDay;
        unsigned day = 0;      // Julian 1-365 (no Feb 29) or zero-based 0-365
        unsigned month = 1;    // MonthWeekDay: month 1-12,
        unsigned week = 1;     // week 1-5 (5 = last),
        unsigned weekday = 0;  // weekday 0-6 (Sunday = 0)
        std::chrono::seconds time = std::chrono::hours{2};

        date::local_seconds in(date::year year) const;
    };

private:
    std::chrono::seconds standard_offset_{};
    std::chrono::seconds daylight_offset_{};
    When start_;
    When end_;
};

/// The POSIX TZ string in the footer of the zone's TZif file (version 2 or
/// later), or "" if there is none or the file cannot be read.
std::string tzif_footer(std::string_view zone_name);

/// A zone of the tz database, or built-in UTC.
class ZoneHistory {
public:
    /// "UTC" needs no database. Throws ConfigError for a name the tz
    /// database does not know.
    static ZoneHistory locate(std::string_view name);

    /// The segment containing `t`. The zone's first segment begins at
    /// `beginning_of_time()`.
    ZoneSegment segment_at(SysSeconds t) const;

    static SysSeconds beginning_of_time();

private:
    const date::time_zone* zone_ = nullptr;  // null: UTC
    const PosixZoneRule* rule_ = nullptr;    // continues the zone from rule_from_; lives in a process-wide cache
    SysSeconds rule_from_{};
};

}  // namespace cronoq::core::detail
