// Daylight-saving transitions in the cron engine (docs/guide/time-and-cron.md, the Vixie cron
// rule): fixed-time schedules are never lost nor doubled, wildcard schedules
// follow real time. Expected instants are UTC, computed by hand from the 2026
// transitions, which the first test checks against the tz database.
#include "cron_test_time.hpp"

#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>

#include <gtest/gtest.h>

#include <date/date.h>
#include <date/tz.h>

#include <bitset>
#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cronoq::cron_dst_test::cron_dst_test {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::system_clock::time_point;
using Strings = std::vector<std::string>;

using cron_test_time::rfc3339;
using cron_test_time::utc;

// The next `count` occurrences after `after`, as RFC 3339 text.
Strings occurrences(const std::string& expr, const std::string& tz, const std::string& after, int count) {
    const CronExpr cron = CronExpr::parse(expr);
    Strings out;
    TimePoint t = utc(after);
    for (int i = 0; i < count; ++i) {
        const auto found = cron.next_after(t, tz);
        if (!found) break;
        out.push_back(rfc3339(*found));
        t = *found;
    }
    return out;
}

// ---- the 2026 transitions the tests rely on -------------------------------------------------

TEST(CronDstTest, TzDatabaseHasThe2026TransitionsTheTestsAssume) {
    struct Transition {
        const char* zone;
        const char* at;  // UTC instant of the change
        std::chrono::minutes before;
        std::chrono::minutes after;
    };
    const std::vector<Transition> transitions{
        {"America/New_York", "2026-03-08T07:00:00Z", -5h, -4h},  // 02:00 EST -> 03:00 EDT
        {"America/New_York", "2026-11-01T06:00:00Z", -4h, -5h},  // 02:00 EDT -> 01:00 EST
        {"Europe/Berlin", "2026-03-29T01:00:00Z", 1h, 2h},       // 02:00 CET -> 03:00 CEST
        {"Europe/Berlin", "2026-10-25T01:00:00Z", 2h, 1h},       // 03:00 CEST -> 02:00 CET
        {"Australia/Sydney", "2026-04-04T16:00:00Z", 11h, 10h},  // 5 April 03:00 AEDT -> 02:00 AEST
        {"Australia/Sydney", "2026-10-03T16:00:00Z", 10h, 11h},  // 4 October 02:00 AEST -> 03:00 AEDT
    };
    for (const Transition& t : transitions) {
        SCOPED_TRACE(std::string(t.zone) + " " + t.at);
        const date::time_zone* zone = date::locate_zone(t.zone);
        const date::sys_info after = zone->get_info(utc(t.at));
        const date::sys_info before = zone->get_info(utc(t.at) - 1s);
        EXPECT_EQ(after.begin, utc(t.at));
        EXPECT_EQ(before.offset, t.before);
        EXPECT_EQ(after.offset, t.after);
    }
}

// ---- spring forward: the gap -----------------------------------------------------------

TEST(CronDstTest, FixedTimeInTheSpringGapFiresOnceRightAfterTheGap) {
    // New York, 8 March: 02:30 does not exist; it fires at 03:00 EDT = 07:00Z.
    EXPECT_EQ(occurrences("30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", 2),
              (Strings{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}));
    EXPECT_EQ(occurrences("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 1),
              (Strings{"2026-03-07T07:30:00Z"}));
    EXPECT_EQ(occurrences("0 30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", 1),
              (Strings{"2026-03-08T07:00:00Z"}));
    EXPECT_EQ(occurrences("30 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 2),
              (Strings{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}));
    EXPECT_EQ(occurrences("30 2 * * *", "Australia/Sydney", "2026-10-03T12:00:00Z", 2),
              (Strings{"2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"}));
}

TEST(CronDstTest, SeveralGapTimesAndAMatchAtTheGapEndShareOneFiring) {
    // 02:00, 02:30 (in the gap) and 03:00 (its end) are one firing at 07:00Z.
    EXPECT_EQ(occurrences("0,30 2,3 * * *", "America/New_York", "2026-03-08T06:00:00Z", 3),
              (Strings{"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-09T06:00:00Z"}));
}

TEST(CronDstTest, WildcardScheduleSkipsTheSpringGap) {
    EXPECT_EQ(occurrences("*/30 * * * *", "America/New_York", "2026-03-08T06:00:00Z", 3),
              (Strings{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}));
    EXPECT_EQ(occurrences("0 * * * *", "America/New_York", "2026-03-08T05:30:00Z", 3),
              (Strings{"2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"}));
    // Every local 02:xx of 8 March is skipped; the next is 9 March 02:00 EDT.
    EXPECT_EQ(occurrences("*/30 2 * * *", "America/New_York", "2026-03-08T00:00:00Z", 1),
              (Strings{"2026-03-09T06:00:00Z"}));
    EXPECT_EQ(occurrences("*/15 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", 1),
              (Strings{"2026-03-30T00:00:00Z"}));
    EXPECT_EQ(occurrences("*/30 2 * * *", "Australia/Sydney", "2026-10-03T12:00:00Z", 1),
              (Strings{"2026-10-04T15:00:00Z"}));
}

// ---- fall back: the overlap ------------------------------------------------------------

TEST(CronDstTest, FixedTimeInTheFallOverlapFiresOnceAtItsFirstOccurrence) {
    // New York, 1 November: 01:30 happens at 05:30Z (EDT) and 06:30Z (EST).
    EXPECT_EQ(occurrences("30 1 * * *", "America/New_York", "2026-11-01T00:00:00Z", 2),
              (Strings{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}));
    EXPECT_EQ(occurrences("30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", 1),
              (Strings{"2026-11-02T06:30:00Z"}));
    EXPECT_EQ(occurrences("0 2 * * *", "America/New_York", "2026-11-01T00:00:00Z", 1),
              (Strings{"2026-11-01T07:00:00Z"}));
    EXPECT_EQ(occurrences("30 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 2),
              (Strings{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
    EXPECT_EQ(occurrences("30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00Z", 2),
              (Strings{"2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}));
}

TEST(CronDstTest, WildcardScheduleFiresInBothPassesOfTheFallOverlap) {
    EXPECT_EQ(occurrences("0 * * * *", "America/New_York", "2026-11-01T04:30:00Z", 3),
              (Strings{"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}));
    EXPECT_EQ(occurrences("*/30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", 5),
              (Strings{"2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z",
                       "2026-11-01T06:30:00Z", "2026-11-02T06:00:00Z"}));
    EXPECT_EQ(occurrences("30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3),
              (Strings{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}));
    EXPECT_EQ(occurrences("*/30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00Z", 5),
              (Strings{"2026-04-04T15:00:00Z", "2026-04-04T15:30:00Z", "2026-04-04T16:00:00Z",
                       "2026-04-04T16:30:00Z", "2026-04-05T16:00:00Z"}));
}

// ---- after the last transition listed in the zone's file ---------------------------------------

TEST(CronDstTest, TransitionsAfter2037FollowTheZonesRule) {
    // New York 2040: 11 March 02:00 EST -> 03:00 EDT (07:00Z), 4 November
    // 02:00 EDT -> 01:00 EST (06:00Z).
    EXPECT_EQ(occurrences("30 2 * * *", "America/New_York", "2040-03-11T00:00:00Z", 2),
              (Strings{"2040-03-11T07:00:00Z", "2040-03-12T06:30:00Z"}));
    EXPECT_EQ(occurrences("30 1 * * *", "America/New_York", "2040-11-04T00:00:00Z", 2),
              (Strings{"2040-11-04T05:30:00Z", "2040-11-05T06:30:00Z"}));
    EXPECT_EQ(occurrences("0 9 * * *", "America/New_York", "2100-07-15T00:00:00Z", 1),
              (Strings{"2100-07-15T13:00:00Z"}));
    // Sydney 2045: 1 October 02:00 AEST -> 03:00 AEDT (30 September 16:00Z).
    EXPECT_EQ(occurrences("30 2 * * *", "Australia/Sydney", "2045-09-30T12:00:00Z", 2),
              (Strings{"2045-09-30T16:00:00Z", "2045-10-01T15:30:00Z"}));
    EXPECT_EQ(occurrences("0 9 * * *", "Australia/Sydney", "2045-01-15T00:00:00Z", 1),
              (Strings{"2045-01-15T22:00:00Z"}));
    // Nuuk 2040: the gap is Saturday 24 March 23:00-24:00 local (-02 -> -01
    // at 01:00Z), so a 23:30 job fires at 00:00 local on the next day.
    EXPECT_EQ(occurrences("30 23 * * *", "America/Nuuk", "2040-03-24T12:00:00Z", 2),
              (Strings{"2040-03-25T01:00:00Z", "2040-03-26T00:30:00Z"}));
    EXPECT_EQ(occurrences("*/30 23 * * *", "America/Nuuk", "2040-03-24T12:00:00Z", 1),
              (Strings{"2040-03-26T00:00:00Z"}));
}

// ---- cross-check against the rule stated minute by minute ------------------------------------

// The SPEC rule written directly over real instants, with the tz library's
// local_info: an independent statement of what next_after must produce.
class ReferenceRule {
public:
    ReferenceRule(const date::time_zone& zone, std::bitset<60> minutes, std::bitset<24> hours, bool wildcard)
        : zone_(zone), minutes_(minutes), hours_(hours), wildcard_(wildcard) {}

    bool fires_at(date::sys_seconds t) const {
        const date::local_seconds local = zone_.to_local(t);
        if (wildcard_) return matches(local);
        if (matches(local)) {
            const date::local_info info = zone_.get_info(local);
            // An ambiguous local time fires at its first (earlier) instant only.
            if (info.result != date::local_info::ambiguous) return true;
            if (t == date::sys_seconds{local.time_since_epoch() - info.first.offset}) return true;
        }
        const date::sys_info now = zone_.get_info(t);
        if (now.begin != t) return false;
        const date::sys_info before = zone_.get_info(t - 1s);
        for (auto skipped = date::local_seconds{t.time_since_epoch() + before.offset};
             skipped < date::local_seconds{t.time_since_epoch() + now.offset}; skipped += 1min) {
            if (matches(skipped)) return true;  // a gap time fires at the gap's end
        }
        return false;
    }

private:
    bool matches(date::local_seconds local) const {
        const auto time_of_day = local - date::floor<date::days>(local);
        const auto hour = static_cast<std::size_t>(std::chrono::floor<std::chrono::hours>(time_of_day).count());
        const auto minute =
            static_cast<std::size_t>(std::chrono::floor<std::chrono::minutes>(time_of_day).count() % 60);
        return time_of_day % 60s == 0s && hours_[hour] && minutes_[minute];
    }

    const date::time_zone& zone_;
    std::bitset<60> minutes_;
    std::bitset<24> hours_;
    bool wildcard_;
};

struct FieldChoice {
    const char* text;
    std::vector<unsigned> values;
};

template <std::size_t N>
std::bitset<N> bits_of(const FieldChoice& choice) {
    std::bitset<N> bits;
    for (unsigned v : choice.values) bits.set(v);
    return bits;
}

std::vector<unsigned> every(unsigned from, unsigned to, unsigned step) {
    std::vector<unsigned> out;
    for (unsigned v = from; v <= to; v += step) out.push_back(v);
    return out;
}

TEST(CronDstTest, AgreesWithTheRuleCheckedMinuteByMinuteAroundTransitions) {
    const std::vector<FieldChoice> minute_choices{
        {"0", {0}}, {"30", {30}}, {"*/15", every(0, 59, 15)}, {"*/30", every(0, 59, 30)},
        {"15-45/15", {15, 30, 45}}, {"0,45", {0, 45}}, {"59", {59}}};
    const std::vector<FieldChoice> hour_choices{
        {"*", every(0, 23, 1)}, {"1", {1}}, {"2", {2}}, {"3", {3}}, {"1-3", {1, 2, 3}},
        {"2,3", {2, 3}}, {"*/2", every(0, 23, 2)}, {"0-4", every(0, 4, 1)}, {"1,2", {1, 2}}};
    // Lord Howe changes by 30 minutes, St John's has a half-hour offset.
    for (const char* zone_name : {"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe",
                                  "America/St_Johns"}) {
        const date::time_zone& zone = *date::locate_zone(zone_name);
        const date::sys_seconds first_transition{zone.get_info(date::sys_days{date::year{2026} / 1 / 1}).end};
        const date::sys_seconds second_transition{zone.get_info(first_transition).end};
        for (const date::sys_seconds transition : {first_transition, second_transition}) {
            const date::sys_seconds window_begin = transition - 12h;
            const date::sys_seconds window_end = transition + 24h;
            for (const FieldChoice& minute : minute_choices) {
                for (const FieldChoice& hour : hour_choices) {
                    const std::string text = std::string(minute.text) + " " + hour.text + " * * *";
                    const CronExpr expr = CronExpr::parse(text);
                    const ReferenceRule rule(zone, bits_of<60>(minute), bits_of<24>(hour), expr.is_wildcard());
                    Strings expected;
                    for (date::sys_seconds t = window_begin + 1min; t < window_end; t += 1min) {
                        if (rule.fires_at(t)) expected.push_back(rfc3339(t));
                    }
                    Strings actual;
                    for (auto t = expr.next_after(window_begin, zone_name); t && *t < window_end;
                         t = expr.next_after(*t, zone_name)) {
                        actual.push_back(rfc3339(*t));
                    }
                    EXPECT_EQ(actual, expected) << text << " in " << zone_name << " around " << rfc3339(transition);
                }
            }
        }
    }
}

}  // namespace
}  // namespace cronoq::cron_dst_test::cron_dst_test
