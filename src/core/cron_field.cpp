#include "cron_field.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

namespace cronoq::core::detail {
namespace {

constexpr std::array<std::string_view, 12> month_names{
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 7> weekday_names{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// Numbers are capped while reading so that no input overflows; anything this
// large is out of range in every field anyway.
constexpr unsigned number_cap = 1'000'000;

// Character classes by hand: <cctype> is locale-dependent and undefined for
// negative chars, and the parser must accept arbitrary bytes.
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
char to_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

constexpr char hex_digits[] = "0123456789ABCDEF";

std::string hex_byte(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return std::string("0x") + hex_digits[byte >> 4] + hex_digits[byte & 0xF];
}

std::string describe_unexpected(char c) {
    switch (c) {
    case 'L':
    case 'l': return "'L' (last) is not supported";
    case 'W':
    case 'w': return "'W' (nearest weekday) is not supported";
    case '#': return "'#' (nth weekday of the month) is not supported";
    case '?': return "'?' is only allowed in the day fields";
    default: break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte > 0x20 && byte < 0x7F) return std::string("unexpected character '") + c + "'";
    return "unexpected byte " + hex_byte(c);
}

std::uint64_t progression_bits(unsigned first, unsigned last, unsigned step) {
    std::uint64_t bits = 0;
    for (unsigned value = first; value <= last; value += step) bits |= std::uint64_t{1} << value;
    return bits;
}

unsigned span_of(const CronFieldSpec& spec) { return spec.max - spec.min + 1; }

// Reads one item of a list (`*`, `a`, `a-b`, with an optional `/step`).
class ItemParser {
public:
    ItemParser(std::string_view item, const CronFieldSpec& spec) : item_(item), spec_(spec) {}

    // Adds the item's values to `bits`; returns an error message, or "" if fine.
    std::string parse(std::uint64_t& bits) {
        unsigned first = 0;
        unsigned last = 0;
        bool is_range = false;
        const char lead = item_.front();
        if (lead == '*' || (lead == '?' && spec_.question_mark_allowed)) {
            pos_ = 1;
            first = spec_.min;
            last = spec_.max;
            is_range = true;
        } else {
            if (auto error = read_value(first, "missing value"); !error.empty()) return error;
            last = first;
            if (next_is('-')) {
                ++pos_;
                if (auto error = read_value(last, "missing value after '-'"); !error.empty()) return error;
                if (last < first) return "range " + std::string(item_.substr(0, pos_)) + " is reversed";
                is_range = true;
            }
        }
        unsigned step = 1;
        if (next_is('/')) {
            ++pos_;
            if (at_end()) return "missing step after '/'";
            if (!is_digit(item_[pos_])) return describe_unexpected(item_[pos_]);
            const std::string text = read_number(step);
            if (step == 0) return "step must be at least 1";
            if (step > span_of(spec_)) return "step " + text + " is larger than " + std::to_string(span_of(spec_));
            if (!is_range) last = std::max(spec_.max, first);  // `a/n`: from a to the maximum
        }
        if (!at_end()) return describe_unexpected(item_[pos_]);
        for (unsigned value = first; value <= last; value += step) {
            const unsigned stored = value > spec_.max ? value - span_of(spec_) : value;
            bits |= std::uint64_t{1} << stored;
        }
        return {};
    }

private:
    bool at_end() const { return pos_ >= item_.size(); }
    bool next_is(char c) const { return !at_end() && item_[pos_] == c; }

    // Reads digits at pos_ (there is at least one); returns them as written,
    // shortened if very long.
    std::string read_number(unsigned& number) {
        const std::size_t start = pos_;
        number = 0;
        while (!at_end() && is_digit(item_[pos_])) {
            number = std::min(number * 10 + static_cast<unsigned>(item_[pos_] - '0'), number_cap);
            ++pos_;
        }
        const std::string_view text = item_.substr(start, pos_ - start);
        return text.size() > 12 ? std::string(text.substr(0, 12)) + "..." : std::string(text);
    }

    // A number or a name, checked against the field's range.
    std::string read_value(unsigned& value, const char* missing_message) {
        if (at_end()) return missing_message;
        const char c = item_[pos_];
        if (is_digit(c)) {
            const std::string text = read_number(value);
            if (value < spec_.min || value > spec_.max_written) {
                return "value " + text + " is out of range " + std::to_string(spec_.min) + "-" +
                       std::to_string(spec_.max_written);
            }
            return {};
        }
        if (!is_letter(c)) return describe_unexpected(c);
        const std::size_t start = pos_;
        while (!at_end() && is_letter(item_[pos_])) ++pos_;
        const std::string_view word = item_.substr(start, pos_ - start);
        if (spec_.names.empty()) return describe_unexpected(c);
        for (std::size_t i = 0; i < spec_.names.size(); ++i) {
            const std::string_view name = spec_.names[i];
            if (word.size() == name.size() &&
                std::equal(word.begin(), word.end(), name.begin(), [](char a, char b) { return to_upper(a) == b; })) {
                value = spec_.min + static_cast<unsigned>(i);
                return {};
            }
        }
        if (word == "L" || word == "l" || word == "W" || word == "w" || word == "LW" || word == "lw") {
            return describe_unexpected(c);
        }
        return "unknown name " + quote_for_message(word) + " (expected " + std::string(spec_.names.front()) +
               ".." + std::string(spec_.names.back()) + ")";
    }

    std::string_view item_;
    const CronFieldSpec& spec_;
    std::size_t pos_ = 0;
};

// Numbers only: a progression of 3 or more as `a-b/n`, else runs of 3 or more
// as `a-b` and the rest one by one.
std::string format_numbers(std::uint64_t bits) {
    std::vector<unsigned> values;
    for (std::uint64_t rest = bits; rest != 0; rest &= rest - 1) {
        values.push_back(static_cast<unsigned>(std::countr_zero(rest)));
    }
    std::string out;
    if (values.size() >= 3) {
        const unsigned step = values[1] - values[0];
        bool progression = step >= 2;
        for (std::size_t i = 2; progression && i < values.size(); ++i) progression = values[i] - values[i - 1] == step;
        if (progression) {
            return std::to_string(values.front()) + "-" + std::to_string(values.back()) + "/" + std::to_string(step);
        }
    }
    for (std::size_t i = 0; i < values.size();) {
        std::size_t end = i + 1;
        while (end < values.size() && values[end] == values[end - 1] + 1) ++end;
        if (!out.empty()) out += ',';
        if (end - i >= 3) {
            out += std::to_string(values[i]) + "-" + std::to_string(values[end - 1]);
            i = end;
        } else {
            out += std::to_string(values[i]);
            ++i;
        }
    }
    return out;
}

}  // namespace

const CronFieldSpec cron_second_field{"second", 0, 59, 59, {}, false};
const CronFieldSpec cron_minute_field{"minute", 0, 59, 59, {}, false};
const CronFieldSpec cron_hour_field{"hour", 0, 23, 23, {}, false};
const CronFieldSpec cron_day_of_month_field{"day-of-month", 1, 31, 31, {}, true};
const CronFieldSpec cron_month_field{"month", 1, 12, 12, month_names, false};
const CronFieldSpec cron_day_of_week_field{"day-of-week", 0, 6, 7, weekday_names, true};

ParsedCronField parse_cron_field(std::string_view text, const CronFieldSpec& spec) {
    ParsedCronField result;
    if (text.empty()) {
        result.error = "empty field";
        return result;
    }
    result.starts_with_star = text.front() == '*';
    result.is_any = text == "*" || (spec.question_mark_allowed && text == "?");
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (item.empty()) {
            result.error = "empty list item";
            return result;
        }
        if (auto error = ItemParser(item, spec).parse(result.bits); !error.empty()) {
            result.error = std::move(error);
            return result;
        }
        if (comma == std::string_view::npos) return result;
        start = comma + 1;
    }
}

std::string format_cron_field(std::uint64_t bits, const CronFieldSpec& spec, StarForm form) {
    const bool contains_min = (bits & (std::uint64_t{1} << spec.min)) != 0;
    if (form != StarForm::Never && contains_min) {
        if (bits == progression_bits(spec.min, spec.max, 1)) return "*";
        // The smallest step whose `*/step` values are all in `bits`; with
        // Always, the values it leaves out follow as a list.
        for (unsigned step = 2; step <= span_of(spec); ++step) {
            const std::uint64_t stepped = progression_bits(spec.min, spec.max, step);
            if ((stepped & ~bits) != 0) continue;
            const std::uint64_t rest = bits & ~stepped;
            if (form == StarForm::Exact && (rest != 0 || std::popcount(stepped) < 3)) break;
            // append() rather than operator+: GCC 12 -O2 reports a false
            // -Wrestrict on string concatenation with a literal.
            std::string out = "*/";
            out.append(std::to_string(step));
            if (rest != 0) out.append(",").append(format_numbers(rest));
            return out;
        }
    }
    return format_numbers(bits);
}

std::string quote_for_message(std::string_view text) {
    constexpr std::size_t shown_bytes = 80;
    std::string out = "\"";
    for (const char c : text.substr(0, shown_bytes)) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte >= 0x20 && byte < 0x7F) {
            out += c;
        } else {
            out += "\\x";
            out += hex_digits[byte >> 4];
            out += hex_digits[byte & 0xF];
        }
    }
    if (text.size() > shown_bytes) out += "...";
    out += '"';
    return out;
}

}  // namespace cronoq::core::detail
