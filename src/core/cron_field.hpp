#pragma once
// One field of a cron expression: its grammar, its canonical text, and the
// quoting of user text in error messages. Private to the cron engine: the
// parser (cron_expr.cpp) uses all of it, the time zones (cron_zone.cpp) the
// quoting.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cronoq::core::detail {

/// What a field accepts. Values are stored as bits of a uint64_t (bit v for
/// value v); a written value above `max` is stored as v - (max - min + 1), so
/// weekday 7 is stored as 0 (Sunday).
struct CronFieldSpec {
    std::string_view name;                 // "minute": names the field in errors
    unsigned min;                          // range of '*'
    unsigned max;
    unsigned max_written;                  // largest value accepted in text (7 for weekdays)
    std::span<const std::string_view> names;  // names[i] means min + i (JAN = 1, SUN = 0)
    bool question_mark_allowed;            // '?' means '*' (the day fields)
};

extern const CronFieldSpec cron_second_field;
extern const CronFieldSpec cron_minute_field;
extern const CronFieldSpec cron_hour_field;
extern const CronFieldSpec cron_day_of_month_field;
extern const CronFieldSpec cron_month_field;
extern const CronFieldSpec cron_day_of_week_field;

struct ParsedCronField {
    std::uint64_t bits = 0;
    bool starts_with_star = false;  // the text begins with '*'
    bool is_any = false;            // the text is exactly '*' (or '?' where allowed)
    std::string error;              // non-empty: why the text is invalid, bits meaningless
};

/// Parses one whitespace-free field. Never throws on bad input: the result
/// carries an error message instead (without the field name).
ParsedCronField parse_cron_field(std::string_view text, const CronFieldSpec& spec);

/// How the canonical text of a field may use '*'.
enum class StarForm {
    Never,    // numbers only
    Exact,    // `*`, or `*/n` of 3 or more values, when that is exactly `bits`; else numbers
    Always,   // `*`, `*/n` or `*/n,rest`; `bits` must contain `spec.min`
};

/// Canonical text for `bits`. Numbers are written as `a-b/n` for a
/// progression of 3 or more, else runs of 3 or more as `a-b` and the rest as
/// a list. Parsing the result gives back `bits`, with a leading '*' exactly
/// when the form is Always (or Exact and a star form was chosen).
std::string format_cron_field(std::uint64_t bits, const CronFieldSpec& spec, StarForm form);

/// `text` between double quotes for an error message: quotes and backslashes
/// escaped, bytes outside printable ASCII as \xNN, at most 80 bytes shown.
std::string quote_for_message(std::string_view text);

}  // namespace cronoq::core::detail
