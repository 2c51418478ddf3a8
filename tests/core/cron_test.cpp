// The cron engine (docs/guide/time-and-cron.md): parsing, errors, normalization and the next
// occurrence in UTC. Daylight-saving behaviour is in cron_dst_test.cpp.
//
// Expected times are written as UTC RFC 3339 strings and were computed by
// hand; a second check compares next_after against a day-by-day reference
// matcher on random expressions.
#include "cron_test_time.hpp"

#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>

#include <gtest/gtest.h>

#include <date/date.h>

#include <bitset>
#include <chrono>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cronoq::cron_test::cron_test {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::system_clock::time_point;

using cron_test_time::rfc3339;
using cron_test_time::utc;

// The next occurrence as RFC 3339 text, or "none".
std::string next(const std::string& expr, const std::string& after, const std::string& tz = "UTC") {
    const auto found = CronExpr::parse(expr).next_after(utc(after), tz);
    return found ? rfc3339(*found) : "none";
}

struct NextCase {
    const char* expr;
    const char* after;
    const char* expected;  // "none" for no occurrence within 400 years
};

void check_table(const std::vector<NextCase>& table) {
    for (const NextCase& c : table) {
        SCOPED_TRACE(std::string("\"") + c.expr + "\" after " + c.after);
        EXPECT_EQ(next(c.expr, c.after), c.expected);
    }
}

// ---- next occurrence ----------------------------------------------------------------

TEST(CronNextTest, StepsRangesListsAndNamesSelectTheRightValues) {
    check_table({
        {"* * * * *", "2026-01-15T10:07:30Z", "2026-01-15T10:08:00Z"},
        {"* * * * *", "2026-01-15T10:08:00Z", "2026-01-15T10:09:00Z"},  // strictly after
        {"*/15 * * * *", "2026-01-15T10:07:30Z", "2026-01-15T10:15:00Z"},
        {"*/15 * * * *", "2026-01-15T10:45:00Z", "2026-01-15T11:00:00Z"},
        {"5,35 * * * *", "2026-01-15T10:07:30Z", "2026-01-15T10:35:00Z"},
        {"10-12 * * * *", "2026-01-15T10:12:00Z", "2026-01-15T11:10:00Z"},
        {"10-30/10 * * * *", "2026-01-15T10:07:30Z", "2026-01-15T10:10:00Z"},
        {"10-30/10 * * * *", "2026-01-15T10:30:00Z", "2026-01-15T11:10:00Z"},
        {"50/4 * * * *", "2026-01-15T10:55:00Z", "2026-01-15T10:58:00Z"},  // 50,54,58
        {"50/4 * * * *", "2026-01-15T10:58:00Z", "2026-01-15T11:50:00Z"},
        {"0 9-17/4 * * *", "2026-01-15T10:07:30Z", "2026-01-15T13:00:00Z"},  // 9,13,17
        {"0 0 1 JAN,jul *", "2026-01-15T10:07:30Z", "2026-07-01T00:00:00Z"},
        {"0 0 1 MAR-may/2 *", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"},  // March, May
        {"30 8 * * MON-FRI", "2026-01-16T09:00:00Z", "2026-01-19T08:30:00Z"},  // Friday -> Monday
        {"0 12 * * sat,SUN", "2026-01-15T10:07:30Z", "2026-01-17T12:00:00Z"},
        {"0 0 * * 7", "2026-01-15T10:07:30Z", "2026-01-18T00:00:00Z"},  // 7 is Sunday
        {"0 0 * * 0", "2026-01-15T10:07:30Z", "2026-01-18T00:00:00Z"},
        {"0 0 * * 5-7", "2026-01-17T12:00:00Z", "2026-01-18T00:00:00Z"},  // Fri, Sat, Sun
        {"0 0 * * */2", "2026-01-15T10:07:30Z", "2026-01-17T00:00:00Z"},  // Sun, Tue, Thu, Sat
    });
}

TEST(CronNextTest, CarriesAcrossMonthAndYearEndsAndFindsLeapDays) {
    check_table({
        {"0 0 29 2 *", "2026-01-15T10:07:30Z", "2028-02-29T00:00:00Z"},
        {"0 0 29 2 *", "2027-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
        {"0 0 29 2 *", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},  // 2100 is not a leap year
        {"0 0 31 * *", "2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z"},
        {"0 0 31 * *", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"},
        {"59 23 31 12 *", "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"},
        {"* * * * *", "2026-12-31T23:59:59Z", "2027-01-01T00:00:00Z"},
        {"0 0 1 1 *", "2026-06-01T00:00:00Z", "2027-01-01T00:00:00Z"},
        {"0 0 * * *", "2026-02-28T23:59:59Z", "2026-03-01T00:00:00Z"},
        {"0 23 * * *", "2026-01-15T23:00:00Z", "2026-01-16T23:00:00Z"},
        {"0 0 30 2 *", "2026-01-15T10:07:30Z", "none"},
        {"0 0 31 4,6,9,11 *", "2026-01-15T10:07:30Z", "none"},
    });
}

TEST(CronNextTest, RestrictedDayOfMonthAndDayOfWeekMatchEitherOne) {
    check_table({
        {"0 0 13 * 5", "2026-01-15T10:07:30Z", "2026-01-16T00:00:00Z"},   // Friday 16th
        {"0 0 13 * 5", "2026-01-30T00:00:00Z", "2026-02-06T00:00:00Z"},   // next Friday
        {"0 0 1 * MON", "2026-01-27T00:00:00Z", "2026-02-01T00:00:00Z"},  // the 1st, a Sunday
        {"0 0 * * MON", "2026-01-27T00:00:00Z", "2026-02-02T00:00:00Z"},  // day-of-month unrestricted
        {"0 0 ? * MON", "2026-01-27T00:00:00Z", "2026-02-02T00:00:00Z"},
        {"0 0 1 * *", "2026-01-27T00:00:00Z", "2026-02-01T00:00:00Z"},    // day-of-week unrestricted
        {"0 0 1 * ?", "2026-01-27T00:00:00Z", "2026-02-01T00:00:00Z"},
        // A step or a full range restricts: the OR rule applies.
        {"0 0 */10 * MON", "2026-01-27T00:00:00Z", "2026-01-31T00:00:00Z"},  // 31st (a Saturday)
        {"0 0 1-31 * MON", "2026-01-27T00:00:00Z", "2026-01-28T00:00:00Z"},  // every day
        {"0 0 */5 * *", "2026-01-27T00:00:00Z", "2026-01-31T00:00:00Z"},     // 1,6,...,26,31
        {"0 0 1 * */1", "2026-01-27T00:00:00Z", "2026-01-28T00:00:00Z"},     // every day
    });
}

TEST(CronNextTest, SixFieldsAddASecondsField) {
    check_table({
        {"*/20 * * * * *", "2026-01-15T10:07:30Z", "2026-01-15T10:07:40Z"},
        {"30 0 12 * * *", "2026-01-15T10:07:30Z", "2026-01-15T12:00:30Z"},
        {"0 0 0 * * *", "2026-01-15T10:07:30Z", "2026-01-16T00:00:00Z"},
        {"15,45 * * * * *", "2026-01-15T10:07:45Z", "2026-01-15T10:08:15Z"},
        {"59 59 23 31 12 *", "2026-12-31T23:59:58Z", "2026-12-31T23:59:59Z"},
        {"59 59 23 31 12 *", "2026-12-31T23:59:59Z", "2027-12-31T23:59:59Z"},
    });
}

TEST(CronNextTest, EveryMacroMeansItsFiveFieldForm) {
    check_table({
        {"@yearly", "2026-01-15T10:07:30Z", "2027-01-01T00:00:00Z"},
        {"@annually", "2026-01-15T10:07:30Z", "2027-01-01T00:00:00Z"},
        {"@monthly", "2026-01-15T10:07:30Z", "2026-02-01T00:00:00Z"},
        {"@weekly", "2026-01-15T10:07:30Z", "2026-01-18T00:00:00Z"},  // Sunday
        {"@daily", "2026-01-15T10:07:30Z", "2026-01-16T00:00:00Z"},
        {"@midnight", "2026-01-15T10:07:30Z", "2026-01-16T00:00:00Z"},
        {"@hourly", "2026-01-15T10:07:30Z", "2026-01-15T11:00:00Z"},
        {"  @DAILY\n", "2026-01-15T10:07:30Z", "2026-01-16T00:00:00Z"},
    });
}

TEST(CronNextTest, SubsecondTimesRoundUpToTheNextWholeSecond) {
    const auto expr = CronExpr::parse("* * * * * *");
    EXPECT_EQ(rfc3339(*expr.next_after(utc("2026-01-15T10:07:30Z") + 500ms)), "2026-01-15T10:07:31Z");
    EXPECT_EQ(rfc3339(*expr.next_after(utc("2026-01-15T10:07:30Z") - 1ns)), "2026-01-15T10:07:30Z");
}

TEST(CronNextTest, NeverMatchingScheduleAnswersEmptyQuickly) {
    // Field-by-field iteration: 400 years of "never" is a few thousand steps.
    const auto start = std::chrono::steady_clock::now();
    for (const char* tz : {"UTC", "America/New_York", "Australia/Sydney"}) {
        EXPECT_FALSE(CronExpr::parse("0 0 30 2 *").next_after(utc("2026-01-01T00:00:00Z"), tz)) << tz;
        EXPECT_FALSE(CronExpr::parse("0 0 0 31 11 *").next_after(utc("2026-01-01T00:00:00Z"), tz)) << tz;
    }
    EXPECT_EQ(next("0 0 29 2 *", "2027-03-01T00:00:00Z", "America/New_York"), "2028-02-29T05:00:00Z");
    // Not a bound on wall time (machines are noisy), only a sanity check
    // that nothing scans minute by minute (that would take minutes).
    EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(CronNextTest, TimesNearTheEndOfTheClockRangeGiveEmptyInsteadOfOverflowing) {
    const auto expr = CronExpr::parse("0 0 1 1 *");
    EXPECT_FALSE(expr.next_after(TimePoint::max()));
    EXPECT_FALSE(expr.next_after(TimePoint::max() - 24h));
    const auto early = expr.next_after(TimePoint::min());
    ASSERT_TRUE(early);
    EXPECT_GT(*early, TimePoint::min());
}

// ---- cross-check against a reference matcher ---------------------------------------------

// A random expression written as explicit lists, with the value sets kept for
// a straightforward reference matcher.
struct RandomSchedule {
    std::string text;
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> days_of_month;
    std::bitset<13> months;
    std::bitset<7> days_of_week;
    bool day_of_month_any = false;
    bool day_of_week_any = false;

    bool matches_day(date::sys_days day) const {
        const date::year_month_day ymd{day};
        if (!months[static_cast<unsigned>(ymd.month())]) return false;
        const bool dom = days_of_month[static_cast<unsigned>(ymd.day())];
        const bool dow = days_of_week[date::weekday{day}.c_encoding()];
        if (day_of_month_any && day_of_week_any) return true;
        if (day_of_month_any) return dow;
        if (day_of_week_any) return dom;
        return dom || dow;
    }

    // The first match strictly after `after`, searched up to `until`.
    std::optional<date::sys_seconds> reference_next(date::sys_seconds after, date::sys_days until) const {
        for (date::sys_days day = date::floor<date::days>(after); day < until; day += date::days{1}) {
            if (!matches_day(day)) continue;
            for (unsigned h = 0; h < 24; ++h) {
                if (!hours[h]) continue;
                for (unsigned m = 0; m < 60; ++m) {
                    const date::sys_seconds candidate = day + std::chrono::hours{h} + std::chrono::minutes{m};
                    if (minutes[m] && candidate > after) return candidate;
                }
            }
        }
        return std::nullopt;
    }
};

template <std::size_t N>
std::string random_list(std::mt19937& rng, std::bitset<N>& bits, unsigned min, unsigned max, unsigned max_count) {
    std::uniform_int_distribution<unsigned> value(min, max);
    std::uniform_int_distribution<unsigned> count(1, max_count);
    std::string text;
    for (unsigned i = count(rng); i > 0; --i) {
        const unsigned v = value(rng);
        bits.set(v);
        text += (text.empty() ? "" : ",") + std::to_string(v);
    }
    return text;
}

RandomSchedule random_schedule(std::mt19937& rng) {
    RandomSchedule s;
    std::uniform_int_distribution<int> coin(0, 3);
    const std::string minute = random_list(rng, s.minutes, 0, 59, 3);
    const std::string hour = random_list(rng, s.hours, 0, 23, 3);
    std::string dom = "*";
    s.day_of_month_any = coin(rng) != 0;
    if (s.day_of_month_any) {
        for (unsigned d = 1; d <= 31; ++d) s.days_of_month.set(d);
    } else {
        dom = random_list(rng, s.days_of_month, 1, 31, 3);
    }
    std::string month = "*";
    if (coin(rng) == 0) {
        month = random_list(rng, s.months, 1, 12, 3);
    } else {
        for (unsigned m = 1; m <= 12; ++m) s.months.set(m);
    }
    std::string dow = "*";
    s.day_of_week_any = coin(rng) != 0;
    if (s.day_of_week_any) {
        s.days_of_week.set();
    } else {
        dow = random_list(rng, s.days_of_week, 0, 6, 2);
    }
    s.text = minute + " " + hour + " " + dom + " " + month + " " + dow;
    return s;
}

TEST(CronNextTest, AgreesWithADayByDayReferenceOnRandomSchedules) {
    std::mt19937 rng(20260101);
    std::uniform_int_distribution<int> start_day(0, 3 * 365);
    for (int i = 0; i < 300; ++i) {
        const RandomSchedule schedule = random_schedule(rng);
        const CronExpr expr = CronExpr::parse(schedule.text);
        date::sys_seconds after = date::sys_days{date::year{2026} / 1 / 1} + date::days{start_day(rng)} +
                                  std::chrono::minutes{start_day(rng)};
        const date::sys_days until = date::floor<date::days>(after) + date::days{3 * 366};
        for (int step = 0; step < 3; ++step) {
            SCOPED_TRACE(schedule.text + " after " + rfc3339(after));
            const auto expected = schedule.reference_next(after, until);
            const auto actual = expr.next_after(after);
            EXPECT_EQ(expr.next_after(after, "Etc/UTC"), actual);  // the tz database's UTC agrees
            if (!expected) {
                // Beyond the reference's window: the answer must be too.
                if (actual) {
                    EXPECT_GE(*actual, TimePoint{until});
                }
                break;
            }
            ASSERT_TRUE(actual);
            ASSERT_EQ(rfc3339(*actual), rfc3339(*expected));
            after = *expected;
        }
    }
}

// ---- normalization ----------------------------------------------------------------

TEST(CronToStringTest, GivesTheCanonicalFormThatParsesBackEqual) {
    struct Case {
        const char* input;
        const char* normalized;
    };
    const std::vector<Case> cases{
        {"* * * * *", "* * * * *"},
        {"\t*  *\t* * *\n", "* * * * *"},
        {"*/15 * * * *", "*/15 * * * *"},
        {"*/1 * * * *", "* * * * *"},
        {"0-59 * * * *", "0-59 * * * *"},
        {"5,1,3 * * * *", "1-5/2 * * * *"},
        {"1,2,7 * * * *", "1,2,7 * * * *"},
        {"1-5,3-8,20 * * * *", "1-8,20 * * * *"},
        {"*/10,5 * * * *", "*/10,5 * * * *"},
        {"*/60 * * * *", "*/60 * * * *"},
        {"50/4 * * * *", "50-58/4 * * * *"},
        {"0 */5 * * *", "0 */5 * * *"},
        {"0 9-17/4 * * *", "0 9-17/4 * * *"},
        {"0 0 * JAN,jul *", "0 0 * 1,7 *"},
        {"0 0 1 */3 *", "0 0 1 */3 *"},
        {"0 0 1 1-10/3 *", "0 0 1 */3 *"},
        {"0 0 1 2-11/3 *", "0 0 1 2-11/3 *"},
        {"*/20,7 * * * * *", "0,7,20,40 * * * * *"},
        {"0 0 1 */1 *", "0 0 1 * *"},
        {"30 8 * * MON-FRI", "30 8 * * 1-5"},
        {"0 0 * * 7", "0 0 * * 0"},
        {"0 0 * * 5-7", "0 0 * * 0,5,6"},
        {"0 0 ? * ?", "0 0 * * *"},
        {"0 0 1-31 * *", "0 0 1-31 * *"},
        {"0 0 */1 * *", "0 0 1-31 * *"},
        {"0 0 1 * 0-7", "0 0 1 * 0-6"},
        {"@hourly", "0 * * * *"},
        {"@weekly", "0 0 * * 0"},
        {"@yearly", "0 0 1 1 *"},
        {"*/20 * * * * *", "*/20 * * * * *"},
        {"0 * * * * *", "0 * * * * *"},
        {"0-59 0 0 * * *", "* 0 0 * * *"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.input);
        const CronExpr expr = CronExpr::parse(c.input);
        EXPECT_EQ(expr.to_string(), c.normalized);
        const CronExpr again = CronExpr::parse(expr.to_string());
        EXPECT_EQ(again, expr);
        EXPECT_EQ(again.to_string(), expr.to_string());
    }
}

TEST(CronToStringTest, KeepsWildcardAndSecondsFlags) {
    EXPECT_TRUE(CronExpr::parse("*/15 * * * *").is_wildcard());
    EXPECT_TRUE(CronExpr::parse("0 * * * *").is_wildcard());
    EXPECT_TRUE(CronExpr::parse("*/30 2 * * *").is_wildcard());
    EXPECT_TRUE(CronExpr::parse("@hourly").is_wildcard());
    EXPECT_TRUE(CronExpr::parse("0-59 * * * *").is_wildcard());  // hour is '*'
    EXPECT_FALSE(CronExpr::parse("0-59 0-23 * * *").is_wildcard());
    EXPECT_FALSE(CronExpr::parse("30 2 * * *").is_wildcard());
    EXPECT_FALSE(CronExpr::parse("@daily").is_wildcard());
    EXPECT_FALSE(CronExpr::parse("* 0 0 * * *").is_wildcard());  // the seconds field does not count
    EXPECT_TRUE(CronExpr::parse("0 * * * * *").has_seconds());
    EXPECT_FALSE(CronExpr::parse("* * * * *").has_seconds());

    // Same values, different wildcard flag: different expressions.
    EXPECT_NE(CronExpr::parse("0-59 0-23 * * *"), CronExpr::parse("* * * * *"));
    EXPECT_NE(CronExpr::parse("0 * * * * *"), CronExpr::parse("* * * * *"));
    EXPECT_EQ(CronExpr::parse("0 0 * * 7"), CronExpr::parse("0 0 * * SUN"));
    EXPECT_EQ(CronExpr::parse("@midnight"), CronExpr::parse("0 0 * * *"));
}

// ---- errors ----------------------------------------------------------------------

std::string parse_error(const std::string& text) {
    try {
        (void)CronExpr::parse(text);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(CronParseTest, ErrorNamesTheTextAndTheField) {
    EXPECT_EQ(parse_error("*/0 * * * *"), "cron \"*/0 * * * *\": minute: step must be at least 1");
    EXPECT_EQ(parse_error("* * * *"), "cron \"* * * *\": expected 5 or 6 fields, got 4");
    EXPECT_EQ(parse_error("0 0 * * 8"), "cron \"0 0 * * 8\": day-of-week: value 8 is out of range 0-7");
}

TEST(CronParseTest, MalformedExpressionsAreRejectedWithAClearMessage) {
    struct Case {
        std::string text;
        const char* message;  // a part of the error
    };
    const std::vector<Case> cases{
        {"", "empty expression"},
        {" \t ", "empty expression"},
        {"* * * *", "expected 5 or 6 fields, got 4"},
        {"* * * * * * *", "expected 5 or 6 fields, got 7"},
        {"60 * * * *", "minute: value 60 is out of range 0-59"},
        {"* 60 * * * *", "minute: value 60 is out of range 0-59"},
        {"60 * * * * *", "second: value 60 is out of range 0-59"},
        {"* 24 * * *", "hour: value 24 is out of range 0-23"},
        {"* * 0 * *", "day-of-month: value 0 is out of range 1-31"},
        {"* * 32 * *", "day-of-month: value 32 is out of range 1-31"},
        {"* * * 0 *", "month: value 0 is out of range 1-12"},
        {"* * * 13 *", "month: value 13 is out of range 1-12"},
        {"99999999999999999999 * * * *", "minute: value 999999999999... is out of range 0-59"},
        {"5-1 * * * *", "minute: range 5-1 is reversed"},
        {"* * * * FRI-MON", "day-of-week: range FRI-MON is reversed"},
        {"1,,2 * * * *", "minute: empty list item"},
        {",1 * * * *", "minute: empty list item"},
        {"1, * * * *", "minute: empty list item"},
        {"*/61 * * * *", "minute: step 61 is larger than 60"},
        {"* */25 * * *", "hour: step 25 is larger than 24"},
        {"*/ * * * *", "minute: missing step after '/'"},
        {"* * * * MON-", "day-of-week: missing value after '-'"},
        {"*/5/2 * * * *", "minute: unexpected character '/'"},
        {"1-2-3 * * * *", "minute: unexpected character '-'"},
        {"-1 * * * *", "minute: unexpected character '-'"},
        {"5x * * * *", "minute: unexpected character 'x'"},
        {"*5 * * * *", "minute: unexpected character '5'"},
        {"JAN * * * *", "minute: unexpected character 'J'"},
        {"? * * * *", "minute: '?' is only allowed in the day fields"},
        {"* * * ? *", "month: '?' is only allowed in the day fields"},
        {"* * L * *", "day-of-month: 'L' (last) is not supported"},
        {"* * * * 5L", "day-of-week: 'L' (last) is not supported"},
        {"* * 15W * *", "day-of-month: 'W' (nearest weekday) is not supported"},
        {"* * * * 5#2", "day-of-week: '#' (nth weekday of the month) is not supported"},
        {"* * * FOO *", "month: unknown name \"FOO\" (expected JAN..DEC)"},
        {"* * * MON *", "month: unknown name \"MON\""},
        {"* * * * JAN", "day-of-week: unknown name \"JAN\" (expected SUN..SAT)"},
        {"* * * * MONDAY", "day-of-week: unknown name \"MONDAY\""},
        {"@reboot", "unknown macro \"@reboot\""},
        {"@daily 5", "unexpected text after @daily"},
        {"@", "unknown macro \"@\""},
        {"* * * * *\x01", "day-of-week: unexpected byte 0x01"},
        {"\xff * * * *", "minute: unexpected byte 0xFF"},
        {std::string("* * \0 * *", 9), "day-of-month: unexpected byte 0x00"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.text);
        const std::string error = parse_error(c.text);
        EXPECT_NE(error.find(c.message), std::string::npos) << error;
        EXPECT_EQ(error.rfind("cron \"", 0), 0u) << error;
    }
}

TEST(CronParseTest, ErrorMessagesEscapeBytesAndShortenLongText) {
    EXPECT_EQ(parse_error("\xff * * * *"), "cron \"\\xFF * * * *\": minute: unexpected byte 0xFF");
    EXPECT_EQ(parse_error("\"x\" * * * *"), "cron \"\\\"x\\\" * * * *\": minute: unexpected character '\"'");
    const std::string long_text(1000, '1');
    const std::string error = parse_error(long_text);
    EXPECT_LT(error.size(), 200u) << error;
    EXPECT_NE(error.find("...\": expected 5 or 6 fields, got 1"), std::string::npos) << error;
}

TEST(CronParseTest, RandomBytesEitherParseOrThrowConfigError) {
    std::mt19937 rng(42);
    const std::string cron_alphabet = "0123456789*/,-?  \tLW#@abcJANMONSUNdailyhour";
    const std::string field_alphabet = "0123456789*/,-?";
    std::uniform_int_distribution<int> length(0, 40);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> pick(0, cron_alphabet.size() - 1);
    std::uniform_int_distribution<std::size_t> pick_field(0, field_alphabet.size() - 1);
    std::uniform_int_distribution<int> mode(0, 2);
    int parsed = 0;
    for (int i = 0; i < 5000; ++i) {
        std::string text;
        const int m = mode(rng);
        for (int n = length(rng); n > 0; --n) {
            text += (m == 0 || (m == 1 && byte(rng) < 16)) ? static_cast<char>(byte(rng)) : cron_alphabet[pick(rng)];
        }
        if (m == 2 && i % 2 == 0) {
            // Five plausible fields: exercises the field parsers, not the count.
            text.clear();
            for (int f = 0; f < 5; ++f) {
                text += f == 0 ? "" : " ";
                for (int n = length(rng) % 3 + 1; n > 0; --n) text += field_alphabet[pick_field(rng)];
            }
        }
        try {
            const CronExpr expr = CronExpr::parse(text);
            ++parsed;
            EXPECT_EQ(CronExpr::parse(expr.to_string()), expr) << text;
            (void)expr.next_after(utc("2026-01-15T10:07:30Z"));
        } catch (const ConfigError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("cron \"", 0), 0u) << e.what();
        }
    }
    EXPECT_GT(parsed, 0);  // the generator does reach valid expressions
}

TEST(CronParseTest, RandomValidExpressionsRoundTripThroughToString) {
    std::mt19937 rng(7);
    const std::vector<std::string> items{"*", "*/7", "*/2", "3", "5-9", "10-40/6", "4/5", "1,2,3"};
    std::uniform_int_distribution<std::size_t> pick(0, items.size() - 1);
    std::uniform_int_distribution<int> list_length(1, 3);
    for (int i = 0; i < 500; ++i) {
        std::string text;
        for (int f = 0; f < 6; ++f) {
            std::string field;
            for (int n = list_length(rng); n > 0; --n) field += (field.empty() ? "" : ",") + items[pick(rng)];
            text += (f == 0 ? "" : " ") + field;
        }
        // Values such as 40 are out of range for some fields: skip those.
        std::optional<CronExpr> expr;
        try {
            expr = CronExpr::parse(text);
        } catch (const ConfigError&) {
            continue;
        }
        SCOPED_TRACE(text + " -> " + expr->to_string());
        const CronExpr again = CronExpr::parse(expr->to_string());
        EXPECT_EQ(again, *expr);
        EXPECT_EQ(again.next_after(utc("2026-05-05T05:05:05Z")), expr->next_after(utc("2026-05-05T05:05:05Z")));
    }
}

// ---- time zones ----------------------------------------------------------------------

TEST(CronTimeZoneTest, UnknownTimeZoneIsAConfigError) {
    const auto expr = CronExpr::parse("0 0 * * *");
    for (const char* tz : {"Mars/Olympus_Mons", "", "../../etc/passwd", "utc\xff"}) {
        SCOPED_TRACE(tz);
        try {
            (void)expr.next_after(utc("2026-01-15T10:07:30Z"), tz);
            ADD_FAILURE() << "no error";
        } catch (const ConfigError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("time zone \"", 0), 0u) << e.what();
        }
    }
}

TEST(CronTimeZoneTest, LocalTimesAreEvaluatedInTheZone) {
    EXPECT_EQ(next("0 9 * * *", "2026-01-15T10:07:30Z", "America/New_York"), "2026-01-15T14:00:00Z");  // EST
    EXPECT_EQ(next("0 9 * * *", "2026-07-15T10:07:30Z", "America/New_York"), "2026-07-15T13:00:00Z");  // EDT
    EXPECT_EQ(next("0 9 * * *", "2026-01-15T10:07:30Z", "Asia/Kolkata"), "2026-01-16T03:30:00Z");      // +05:30
    EXPECT_EQ(next("0 0 1 * *", "2026-01-15T10:07:30Z", "Australia/Sydney"), "2026-01-31T13:00:00Z");  // AEDT
    // The day rule uses the local date: Monday 00:30 in Sydney is Sunday in UTC.
    EXPECT_EQ(next("30 0 * * MON", "2026-01-15T10:07:30Z", "Australia/Sydney"), "2026-01-18T13:30:00Z");
}

}  // namespace
}  // namespace cronoq::cron_test::cron_test
