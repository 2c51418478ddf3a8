#include "cron_zone.hpp"

#include "cron_field.hpp"

#include <cronoq/config_error.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace cronoq::core::detail {
namespace {

using Seconds = std::chrono::seconds;

// Where date/tz, built with USE_OS_TZDB on Linux, reads the database from;
// the library does not expose it.
constexpr std::string_view tz_directory = "/usr/share/zoneinfo/";

// Reads a POSIX TZ string left to right; every read_ returns false on
// malformed text.
class PosixReader {
public:
    explicit PosixReader(std::string_view text) : text_(text) {}

    bool at_end() const { return pos_ >= text_.size(); }
    bool next_is(char c) const { return !at_end() && text_[pos_] == c; }
    bool skip(char c) {
        if (!next_is(c)) return false;
        ++pos_;
        return true;
    }

    // `EST` or `<+0530>`.
    bool read_name() {
        if (skip('<')) {
            const std::size_t close = text_.find('>', pos_);
            if (close == std::string_view::npos || close == pos_) return false;
            pos_ = close + 1;
            return true;
        }
        const std::size_t start = pos_;
        const auto is_letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
        while (!at_end() && is_letter(text_[pos_])) ++pos_;
        return pos_ - start >= 3;
    }

    // [+-]hh[:mm[:ss]] with hh up to `max_hours`.
    bool read_time(Seconds& out, unsigned max_hours) {
        const bool negative = next_is('-');
        if (negative || next_is('+')) ++pos_;
        unsigned hours = 0;
        unsigned minutes = 0;
        unsigned seconds = 0;
        if (!read_unsigned(hours, max_hours)) return false;
        if (skip(':')) {
            if (!read_unsigned(minutes, 59)) return false;
            if (skip(':') && !read_unsigned(seconds, 59)) return false;
        }
        out = std::chrono::hours{hours} + std::chrono::minutes{minutes} + Seconds{seconds};
        if (negative) out = -out;
        return true;
    }

    bool read_unsigned(unsigned& out, unsigned max) {
        const std::size_t start = pos_;
        out = 0;
        while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9' && pos_ - start < 4) {
            out = out * 10 + static_cast<unsigned>(text_[pos_] - '0');
            ++pos_;
        }
        return pos_ > start && out <= max;
    }

    bool read_when(PosixZoneRule::When& when) {
        using Kind = PosixZoneRule::When::Kind;
        if (skip('J')) {
            when.kind = Kind::Julian;
            if (!read_unsigned(when.day, 365) || when.day == 0) return false;
        } else if (skip('M')) {
            when.kind = Kind::MonthWeekDay;
            if (!read_unsigned(when.month, 12) || when.month == 0 || !skip('.')) return false;
            if (!read_unsigned(when.week, 5) || when.week == 0 || !skip('.')) return false;
            if (!read_unsigned(when.weekday, 6)) return false;
        } else {
            when.kind = Kind::ZeroBasedDay;
            if (!read_unsigned(when.day, 365)) return false;
        }
        return !skip('/') || read_time(when.time, 167);
    }

private:
    std::string_view text_;
    std::size_t pos_ = 0;
};

}  // namespace

std::string tzif_footer(std::string_view zone_name) {
    const std::string path = std::string(tz_directory) + std::string(zone_name);
    std::ifstream file(path, std::ios::binary);
    if (!file) return {};
    constexpr std::size_t max_size = 1 << 20;
    std::string data;
    data.reserve(8192);
    char buffer[4096];
    while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
        data.append(buffer, static_cast<std::size_t>(file.gcount()));
        if (data.size() > max_size) return {};
    }
    if (data.size() < 6 || data.compare(0, 4, "TZif") != 0 || data[4] < '2' || data.back() != '\n') return {};
    const std::size_t start = data.rfind('\n', data.size() - 2);
    if (start == std::string::npos) return {};
    return data.substr(start + 1, data.size() - start - 2);
}

namespace {

struct CachedRule {
    PosixZoneRule rule;
    SysSeconds from;  // the beginning of the zone's last listed segment
};

// The footer rule of `zone`, if it is needed and agrees with the listed
// transitions; read once per zone and kept for the life of the process.
const CachedRule* footer_rule(const date::time_zone& zone) {
    static std::mutex mutex;
    static std::unordered_map<const date::time_zone*, std::optional<CachedRule>> cache;
    const std::lock_guard lock(mutex);
    if (const auto found = cache.find(&zone); found != cache.end()) {
        return found->second ? &*found->second : nullptr;
    }
    std::optional<CachedRule>& entry = cache[&zone];
    const auto rule = PosixZoneRule::parse(tzif_footer(zone.name()));
    if (rule) {
        const date::sys_info last = zone.get_info(date::sys_days{date::year{9999} / 1 / 1});
        const SysSeconds from{last.begin};
        // The rule continues the file's data, so the two agree where they meet.
        if (from > ZoneHistory::beginning_of_time() && rule->segment_at(from).offset == last.offset) {
            entry = CachedRule{*rule, from};
        }
    }
    return entry ? &*entry : nullptr;
}

}  // namespace

date::local_seconds PosixZoneRule::When::in(date::year year) const {
    const date::local_days new_year{year / date::January / 1};
    date::local_days date_in_year = new_year;
    switch (kind) {
    case Kind::Julian:  // Jn counts 1-365 and never February 29
        date_in_year = new_year + date::days{static_cast<int>(day) - 1 + (year.is_leap() && day >= 60 ? 1 : 0)};
        break;
    case Kind::ZeroBasedDay: date_in_year = new_year + date::days{static_cast<int>(day)}; break;
    case Kind::MonthWeekDay:
        date_in_year = week == 5 ? date::local_days{year / date::month{month} / date::weekday{weekday}[date::last]}
                                 : date::local_days{year / date::month{month} / date::weekday{weekday}[week]};
        break;
    }
    return date::local_seconds{date_in_year} + time;
}

std::optional<PosixZoneRule> PosixZoneRule::parse(std::string_view text) {
    PosixReader reader(text);
    PosixZoneRule rule;
    Seconds standard{};
    if (!reader.read_name() || !reader.read_time(standard, 24) || reader.at_end()) return std::nullopt;
    rule.standard_offset_ = -standard;  // POSIX counts hours west of Greenwich
    if (!reader.read_name()) return std::nullopt;
    rule.daylight_offset_ = rule.standard_offset_ + std::chrono::hours{1};
    if (!reader.at_end() && !reader.next_is(',')) {
        Seconds daylight{};
        if (!reader.read_time(daylight, 24)) return std::nullopt;
        rule.daylight_offset_ = -daylight;
    }
    // Without a rule, when daylight time applies is implementation-defined.
    if (!reader.skip(',') || !reader.read_when(rule.start_)) return std::nullopt;
    if (!reader.skip(',') || !reader.read_when(rule.end_) || !reader.at_end()) return std::nullopt;
    return rule;
}

ZoneSegment PosixZoneRule::segment_at(SysSeconds t) const {
    struct Change {
        SysSeconds at;
        Seconds offset_after;
    };
    // Two changes a year; rule times may move a change up to a week into a
    // neighbouring year, so two years either side surely bracket `t`.
    const int year = static_cast<int>(date::year_month_day{date::floor<date::days>(t)}.year());
    std::array<Change, 10> changes;
    std::size_t count = 0;
    for (int y = year - 2; y <= year + 2; ++y) {
        const auto start = start_.in(date::year{y});
        const auto end = end_.in(date::year{y});
        changes[count++] = Change{SysSeconds{start.time_since_epoch() - standard_offset_}, daylight_offset_};
        changes[count++] = Change{SysSeconds{end.time_since_epoch() - daylight_offset_}, standard_offset_};
    }
    // Stable: of two changes at one instant (daylight time all year) the
    // later-listed one holds.
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.at < b.at; });
    const auto after = std::upper_bound(changes.begin(), changes.end(), t,
                                        [](SysSeconds value, const Change& c) { return value < c.at; });
    if (after == changes.begin() || after == changes.end()) {
        // Unreachable (see above); a fixed offset is the safe answer.
        return ZoneSegment{ZoneHistory::beginning_of_time(), t + std::chrono::hours{24}, standard_offset_};
    }
    const Change& current = *std::prev(after);
    return ZoneSegment{current.at, after->at, current.offset_after};
}

SysSeconds ZoneHistory::beginning_of_time() {
    return SysSeconds{date::sys_days{date::year::min() / date::January / 1}};
}

ZoneHistory ZoneHistory::locate(std::string_view name) {
    ZoneHistory history;
    if (name == "UTC") return history;
    try {
        history.zone_ = date::locate_zone(name);
    } catch (const std::runtime_error&) {
        throw ConfigError("time zone " + quote_for_message(name) + ": not found in the tz database");
    }
    if (const CachedRule* cached = footer_rule(*history.zone_)) {
        history.rule_ = &cached->rule;
        history.rule_from_ = cached->from;
    }
    return history;
}

ZoneSegment ZoneHistory::segment_at(SysSeconds t) const {
    if (zone_ == nullptr) {
        return ZoneSegment{beginning_of_time(), SysSeconds{date::sys_days{date::year::max() / date::December / 31}},
                           Seconds{0}};
    }
    if (rule_ != nullptr && t >= rule_from_) {
        ZoneSegment segment = rule_->segment_at(t);
        segment.begin = std::max(segment.begin, rule_from_);
        return segment;
    }
    const date::sys_info info = zone_->get_info(t);
    return ZoneSegment{SysSeconds{info.begin}, SysSeconds{info.end}, info.offset};
}

}  // namespace cronoq::core::detail
