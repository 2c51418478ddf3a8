// Time zones for the cron engine: the POSIX TZ rule from a TZif footer
// continues a zone after its last listed transition, and agrees with the
// transitions the database does list.
#include "core/cron_zone.hpp"

#include <cronoq/config_error.hpp>

#include <gtest/gtest.h>

#include <date/date.h>
#include <date/tz.h>

#include <string>
#include <vector>

namespace cronoq::cron_zone_test::cron_zone_test {
namespace {

using namespace std::chrono_literals;
using core::detail::PosixZoneRule;
using core::detail::SysSeconds;
using core::detail::ZoneHistory;

SysSeconds at(int y, unsigned m, unsigned d, std::chrono::hours h = 0h) {
    return SysSeconds{date::sys_days{date::year{y} / date::month{m} / date::day{d}}} + h;
}

TEST(CronZoneTest, PosixRuleParsesFooterForms) {
    for (const char* text : {"EST5EDT,M3.2.0,M11.1.0", "AEST-10AEDT,M10.1.0,M4.1.0/3", "IST-1GMT0,M10.5.0,M3.5.0/1",
                             "<-02>2<-01>,M3.5.0/-1,M10.5.0/0", "IST-2IDT,M3.4.4/26,M10.5.0",
                             "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
                             "XXX3YYY,J60/2,300/4", "EST5EDT,0/0,J365/25"}) {
        EXPECT_TRUE(PosixZoneRule::parse(text)) << text;
    }
    // Fixed offsets need no rule; malformed text is refused.
    for (const char* text : {"", "UTC0", "<+0330>-3:30", "EST5EDT", "EST5EDT,M3.2.0", "EST5EDT,M13.2.0,M11.1.0",
                             "EST5EDT,M3.6.0,M11.1.0", "EST5EDT,M3.2.7,M11.1.0", "EST5EDT,J0,J365",
                             "EST5EDT,M3.2.0/168,M11.1.0", "EST5EDT,M3.2.0,M11.1.0x", "ES5EDT,M3.2.0,M11.1.0",
                             "<>5EDT,M3.2.0,M11.1.0", "EST99EDT,M3.2.0,M11.1.0"}) {
        EXPECT_FALSE(PosixZoneRule::parse(text)) << text;
    }
}

TEST(CronZoneTest, PosixRuleGivesTheTransitionsOfItsZone) {
    const auto new_york = PosixZoneRule::parse("EST5EDT,M3.2.0,M11.1.0");
    ASSERT_TRUE(new_york);
    const auto summer = new_york->segment_at(at(2040, 7, 1));
    EXPECT_EQ(summer.begin, at(2040, 3, 11, 7h));
    EXPECT_EQ(summer.end, at(2040, 11, 4, 6h));
    EXPECT_EQ(summer.offset, -4h);
    EXPECT_EQ(new_york->segment_at(at(2040, 11, 4, 6h)).offset, -5h);
    EXPECT_EQ(new_york->segment_at(at(2040, 11, 4, 6h) - 1s).offset, -4h);

    // Southern hemisphere: daylight time spans the new year.
    const auto sydney = PosixZoneRule::parse("AEST-10AEDT,M10.1.0,M4.1.0/3");
    ASSERT_TRUE(sydney);
    const auto new_year = sydney->segment_at(at(2045, 1, 1));
    EXPECT_EQ(new_year.begin, at(2044, 10, 1, 16h));  // Sunday 2 October 2044, 02:00 AEST
    EXPECT_EQ(new_year.end, at(2045, 4, 1, 16h));     // Sunday 2 April 2045, 03:00 AEDT
    EXPECT_EQ(new_year.offset, 11h);

    // A negative rule time: Saturday 23:00 local, before the last Sunday of March.
    const auto nuuk = PosixZoneRule::parse("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
    ASSERT_TRUE(nuuk);
    EXPECT_EQ(nuuk->segment_at(at(2040, 6, 1)).begin, at(2040, 3, 25, 1h));
}

// Every zone whose footer has a daylight-saving rule: between 2030 and the
// end of the listed data the rule and the listed transitions agree (fat TZif
// files list transitions up to 2037). Zones whose listed data go on much
// longer (Asia/Gaza lists predicted Ramadan changes up to the 2080s) differ
// from the rule by design until their last listed transition.
TEST(CronZoneTest, FooterRulesAgreeWithListedTransitionsForEveryZone) {
    int checked = 0;
    for (const date::time_zone& zone : date::get_tzdb().zones) {
        const auto rule = PosixZoneRule::parse(core::detail::tzif_footer(zone.name()));
        if (!rule) continue;
        const SysSeconds listed_end{zone.get_info(date::sys_days{date::year{9999} / 1 / 1}).begin};
        if (listed_end > at(2040, 1, 1)) continue;
        for (SysSeconds t = at(2030, 1, 1); t < listed_end;) {
            const date::sys_info info = zone.get_info(t);
            EXPECT_EQ(rule->segment_at(t).offset, info.offset) << zone.name() << " at " << date::format("%F %T", t);
            if (rule->segment_at(t).offset != info.offset) break;
            t = SysSeconds{info.end};
        }
        ++checked;
    }
    EXPECT_GT(checked, 50);
}

TEST(CronZoneTest, HistoryContinuesZonesAfterTheLastListedTransition) {
    const ZoneHistory new_york = ZoneHistory::locate("America/New_York");
    EXPECT_EQ(new_york.segment_at(at(2026, 7, 1)).offset, -4h);
    EXPECT_EQ(new_york.segment_at(at(2100, 7, 1)).offset, -4h);
    EXPECT_EQ(new_york.segment_at(at(2100, 1, 1)).offset, -5h);
    const ZoneHistory sydney = ZoneHistory::locate("Australia/Sydney");
    EXPECT_EQ(sydney.segment_at(at(2100, 7, 1)).offset, 10h);
    EXPECT_EQ(sydney.segment_at(at(2100, 1, 1)).offset, 11h);
    const ZoneHistory tokyo = ZoneHistory::locate("Asia/Tokyo");
    EXPECT_EQ(tokyo.segment_at(at(2100, 7, 1)).offset, 9h);
    const ZoneHistory utc = ZoneHistory::locate("UTC");
    EXPECT_EQ(utc.segment_at(at(2100, 7, 1)).offset, 0s);
    EXPECT_EQ(utc.segment_at(at(2100, 7, 1)).begin, ZoneHistory::beginning_of_time());
    EXPECT_THROW(ZoneHistory::locate("Nowhere/Special"), ConfigError);
}

// The history's segments tile time: each one begins where the previous ends.
TEST(CronZoneTest, HistorySegmentsAreContiguousAcrossTheListedEnd) {
    for (const char* name : {"America/New_York", "Australia/Sydney", "Europe/Dublin", "America/Nuuk",
                             "Australia/Lord_Howe", "Asia/Jerusalem"}) {
        const ZoneHistory zone = ZoneHistory::locate(name);
        SysSeconds t = at(2030, 1, 1);
        for (int i = 0; i < 40; ++i) {
            const auto segment = zone.segment_at(t);
            ASSERT_LE(segment.begin, t) << name;
            ASSERT_GT(segment.end, t) << name;
            EXPECT_EQ(zone.segment_at(segment.end - 1s).offset, segment.offset) << name;
            t = segment.end;
        }
        EXPECT_GT(t, at(2045, 1, 1)) << name;  // two changes a year continue past 2037
    }
}

}  // namespace
}  // namespace cronoq::cron_zone_test::cron_zone_test
