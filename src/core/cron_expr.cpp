#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>

#include "cron_field.hpp"
#include "cron_zone.hpp"

#include <date/date.h>

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

namespace cronoq {
namespace {

using core::detail::CronFieldSpec;
using core::detail::quote_for_message;
using core::detail::SysSeconds;
using Seconds = std::chrono::seconds;
using LocalSeconds = date::local_seconds;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

std::vector<std::string_view> split_fields(std::string_view text) {
    std::vector<std::string_view> fields;
    std::size_t pos = 0;
    while (pos < text.size()) {
        while (pos < text.size() && is_space(text[pos])) ++pos;
        const std::size_t start = pos;
        while (pos < text.size() && !is_space(text[pos])) ++pos;
        if (pos > start) fields.push_back(text.substr(start, pos - start));
    }
    return fields;
}

struct Macro {
    std::string_view name;
    std::string_view expansion;
};
constexpr std::array<Macro, 7> macros{{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

bool equals_ignoring_case(std::string_view a, std::string_view lower_b) {
    if (a.size() != lower_b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const char c = (a[i] >= 'A' && a[i] <= 'Z') ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
        if (c != lower_b[i]) return false;
    }
    return true;
}

std::optional<unsigned> first_bit_from(std::uint64_t bits, unsigned from) {
    if (from >= 64) return std::nullopt;
    const std::uint64_t candidates = bits & (~std::uint64_t{0} << from);
    if (candidates == 0) return std::nullopt;
    return static_cast<unsigned>(std::countr_zero(candidates));
}

LocalSeconds to_local(SysSeconds instant, Seconds offset) {
    return LocalSeconds{instant.time_since_epoch() + offset};
}

/// The calendar side of an expression: which local times match.
class LocalMatcher {
public:
    std::uint64_t seconds;
    std::uint64_t minutes;
    std::uint32_t hours;
    std::uint32_t days_of_month;
    std::uint16_t months;
    std::uint8_t days_of_week;
    bool day_of_month_any;
    bool day_of_week_any;

    /// The first matching local time in [from, until). Advances field by
    /// field: a month without a matching day costs one step, so even a
    /// schedule that never matches (`0 0 30 2 *`) is cheap over centuries.
    std::optional<LocalSeconds> first_match(LocalSeconds from, LocalSeconds until) const {
        if (from >= until) return std::nullopt;
        const date::local_days from_day = date::floor<date::days>(from);
        const date::year_month_day from_date{from_day};
        int year = static_cast<int>(from_date.year());
        unsigned month = static_cast<unsigned>(from_date.month());
        unsigned day = static_cast<unsigned>(from_date.day());
        const auto time_of_day = static_cast<unsigned>((from - from_day).count());
        unsigned hour = time_of_day / 3600;
        unsigned minute = time_of_day / 60 % 60;
        unsigned second = time_of_day % 60;

        // A carry into a field resets every smaller field to its start.
        const auto next_month = [&] {
            day = 1;
            hour = minute = second = 0;
            if (++month > 12) {
                month = 1;
                ++year;
            }
        };
        int cached_year = 0;
        unsigned cached_month = 0;
        std::uint32_t cached_days = 0;
        for (;;) {
            const date::local_days month_start{date::year{year} / date::month{month} / 1};
            if (LocalSeconds{month_start} >= until) return std::nullopt;
            if ((months >> month & 1u) == 0) {
                next_month();
                continue;
            }
            if (year != cached_year || month != cached_month) {
                cached_year = year;
                cached_month = month;
                cached_days = matching_days(month_start);
            }
            const auto matching_day = first_bit_from(cached_days, day);
            if (!matching_day) {
                next_month();
                continue;
            }
            if (*matching_day != day) {
                day = *matching_day;
                hour = minute = second = 0;
            }
            const auto matching_hour = first_bit_from(hours, hour);
            if (!matching_hour) {
                ++day;
                hour = minute = second = 0;
                continue;
            }
            if (*matching_hour != hour) {
                hour = *matching_hour;
                minute = second = 0;
            }
            const auto matching_minute = first_bit_from(minutes, minute);
            if (!matching_minute) {
                ++hour;
                minute = second = 0;
                continue;
            }
            if (*matching_minute != minute) {
                minute = *matching_minute;
                second = 0;
            }
            const auto matching_second = first_bit_from(seconds, second);
            if (!matching_second) {
                ++minute;
                second = 0;
                continue;
            }
            const LocalSeconds match = LocalSeconds{month_start} + date::days{static_cast<int>(day) - 1} +
                                       std::chrono::hours{hour} + std::chrono::minutes{minute} +
                                       Seconds{*matching_second};
            if (match >= until) return std::nullopt;
            return match;
        }
    }

    /// False when no date ever matches (`0 0 30 2 *`): only a restricted
    /// day-of-month with an unrestricted day-of-week can miss every month.
    bool can_ever_match() const {
        if (day_of_month_any || !day_of_week_any) return true;
        constexpr std::array<unsigned, 13> longest_month{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        for (unsigned month = 1; month <= 12; ++month) {
            const std::uint32_t days_in_month = ((std::uint32_t{1} << longest_month[month]) - 1) << 1;
            if ((months >> month & 1u) != 0 && (days_of_month & days_in_month) != 0) return true;
        }
        return false;
    }

private:
    /// Bit d set for each day d of the month that matches the day rule.
    std::uint32_t matching_days(date::local_days month_start) const {
        const date::year_month_day first{month_start};
        const auto length = static_cast<unsigned>(
            date::year_month_day_last{first.year(), date::month_day_last{first.month()}}.day());
        const std::uint32_t in_month = ((std::uint32_t{1} << length) - 1) << 1;
        const unsigned first_weekday = date::weekday{month_start}.c_encoding();
        std::uint32_t by_weekday = 0;
        for (unsigned d = 1; d <= length; ++d) {
            if ((days_of_week >> ((first_weekday + d - 1) % 7) & 1u) != 0) by_weekday |= std::uint32_t{1} << d;
        }
        const std::uint32_t by_day_of_month = days_of_month & in_month;
        if (day_of_month_any && day_of_week_any) return in_month;
        if (day_of_month_any) return by_weekday;
        if (day_of_week_any) return by_day_of_month;
        return by_day_of_month | by_weekday;  // both restricted: either one (classic cron)
    }
};

/// The first occurrence at or after `first` and before `limit`, in real time.
/// The zone's history is a sequence of segments of constant UTC offset; each
/// segment maps a range of local times to instants one to one, and the
/// daylight-saving rule only matters where one segment meets the previous.
std::optional<SysSeconds> first_occurrence(const LocalMatcher& matcher, const core::detail::ZoneHistory& zone,
                                           bool wildcard, SysSeconds first, SysSeconds limit) {
    SysSeconds position = first;
    while (position < limit) {
        const core::detail::ZoneSegment segment = zone.segment_at(position);
        const SysSeconds end = std::min(segment.end, limit);
        LocalSeconds search_from = to_local(position, segment.offset);
        if (!wildcard && segment.begin > core::detail::ZoneHistory::beginning_of_time()) {
            const Seconds previous_offset = zone.segment_at(segment.begin - Seconds{1}).offset;
            const LocalSeconds previous_local_end = to_local(segment.begin, previous_offset);
            const LocalSeconds local_begin = to_local(segment.begin, segment.offset);
            // Spring forward: local times in [previous_local_end, local_begin)
            // never happen; a fixed-time match among them fires at the
            // segment's beginning.
            if (position == segment.begin && previous_local_end < local_begin &&
                matcher.first_match(previous_local_end, local_begin)) {
                return segment.begin;
            }
            // Fall back: local times before previous_local_end already
            // happened in the previous segment; fixed-time matches fire once.
            search_from = std::max(search_from, previous_local_end);
        }
        if (const auto match = matcher.first_match(search_from, to_local(end, segment.offset))) {
            return SysSeconds{match->time_since_epoch() - segment.offset};
        }
        position = end;
    }
    return std::nullopt;
}

}  // namespace

CronExpr CronExpr::parse(std::string_view text) {
    const std::string_view trimmed = trim(text);
    const auto fail = [&](const std::string& message) -> ConfigError {
        return ConfigError("cron " + quote_for_message(text) + ": " + message);
    };
    if (trimmed.empty()) throw fail("empty expression");

    if (trimmed.front() == '@') {
        const std::vector<std::string_view> words = split_fields(trimmed);
        for (const Macro& macro : macros) {
            if (!equals_ignoring_case(words.front(), macro.name)) continue;
            if (words.size() > 1) throw fail("unexpected text after " + std::string(macro.name));
            return parse(macro.expansion);
        }
        throw fail("unknown macro " + quote_for_message(words.front()) +
                   " (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)");
    }

    const std::vector<std::string_view> fields = split_fields(trimmed);
    if (fields.size() != 5 && fields.size() != 6) {
        throw fail("expected 5 or 6 fields, got " + std::to_string(fields.size()));
    }
    CronExpr expr;
    expr.has_seconds_ = fields.size() == 6;
    const std::size_t skip = expr.has_seconds_ ? 0 : 1;
    const std::array<const CronFieldSpec*, 6> specs{
        &core::detail::cron_second_field, &core::detail::cron_minute_field, &core::detail::cron_hour_field,
        &core::detail::cron_day_of_month_field, &core::detail::cron_month_field, &core::detail::cron_day_of_week_field};
    std::array<core::detail::ParsedCronField, 6> parsed;
    parsed[0].bits = 1;  // without a seconds field: at second 0
    for (std::size_t i = skip; i < specs.size(); ++i) {
        parsed[i] = core::detail::parse_cron_field(fields[i - skip], *specs[i]);
        if (!parsed[i].error.empty()) throw fail(std::string(specs[i]->name) + ": " + parsed[i].error);
    }
    expr.seconds_ = parsed[0].bits;
    expr.minutes_ = parsed[1].bits;
    expr.hours_ = static_cast<std::uint32_t>(parsed[2].bits);
    expr.days_of_month_ = static_cast<std::uint32_t>(parsed[3].bits);
    expr.months_ = static_cast<std::uint16_t>(parsed[4].bits);
    expr.days_of_week_ = static_cast<std::uint8_t>(parsed[5].bits);
    expr.minute_star_ = parsed[1].starts_with_star;
    expr.hour_star_ = parsed[2].starts_with_star;
    expr.day_of_month_any_ = parsed[3].is_any;
    expr.day_of_week_any_ = parsed[5].is_any;
    return expr;
}

std::string CronExpr::to_string() const {
    using core::detail::format_cron_field;
    using core::detail::StarForm;
    // Only the minute and hour fields remember whether they began with '*'
    // (it decides the daylight-saving rule); the others write `*` or `*/n`
    // whenever that is exactly their set.
    const auto star_if = [](bool star) { return star ? StarForm::Always : StarForm::Never; };
    std::string out;
    if (has_seconds_) out = format_cron_field(seconds_, core::detail::cron_second_field, StarForm::Exact) + " ";
    out += format_cron_field(minutes_, core::detail::cron_minute_field, star_if(minute_star_)) + " ";
    out += format_cron_field(hours_, core::detail::cron_hour_field, star_if(hour_star_)) + " ";
    out += (day_of_month_any_
                ? std::string("*")
                : format_cron_field(days_of_month_, core::detail::cron_day_of_month_field, StarForm::Never)) +
           " ";
    out += format_cron_field(months_, core::detail::cron_month_field, StarForm::Exact) + " ";
    out += day_of_week_any_ ? std::string("*")
                            : format_cron_field(days_of_week_, core::detail::cron_day_of_week_field, StarForm::Never);
    return out;
}

std::optional<std::chrono::system_clock::time_point> CronExpr::next_after(std::chrono::system_clock::time_point t,
                                                                         std::string_view tz) const {
    const auto zone = core::detail::ZoneHistory::locate(tz);
    const SysSeconds first = std::chrono::floor<Seconds>(t) + Seconds{1};
    const SysSeconds limit = first + std::chrono::duration_cast<Seconds>(date::years{400});
    const LocalMatcher matcher{seconds_, minutes_, hours_, days_of_month_, months_, days_of_week_,
                               day_of_month_any_, day_of_week_any_};
    if (!matcher.can_ever_match()) return std::nullopt;
    const auto found = first_occurrence(matcher, zone, is_wildcard(), first, limit);
    if (!found || *found > std::chrono::floor<Seconds>(std::chrono::system_clock::time_point::max())) {
        return std::nullopt;
    }
    return std::chrono::time_point_cast<std::chrono::system_clock::duration>(*found);
}

}  // namespace cronoq
