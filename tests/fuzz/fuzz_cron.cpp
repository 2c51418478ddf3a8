// CronExpr on arbitrary bytes. A ConfigError from parse is the only allowed
// failure; an expression that parses must keep the promises of
// cron_expr.hpp:
// - its normalized text parses back to an equal expression with the same text;
// - next_after returns a whole second strictly after the query, and asking
//   again from one second before that occurrence (or from the query, if
//   later) finds it again: the set of occurrences does not depend on where
//   the search starts.
// A broken promise aborts with the input's text, so libFuzzer keeps the crash.
#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace {

using std::chrono::system_clock;
using namespace std::chrono_literals;

// Printable ASCII as is, other bytes as \xNN: inputs are arbitrary bytes.
std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7F && c != '\\') {
            out += c;
        } else {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
            out += escaped;
        }
    }
    return out;
}

[[noreturn]] void broken(const char* promise, std::string_view input, const std::string& detail) {
    std::fprintf(stderr, "fuzz_cron: %s\n  input: \"%s\"\n  %s\n", promise, printable(input).c_str(),
                 printable(detail).c_str());
    std::abort();
}

system_clock::time_point at_seconds(std::int64_t seconds_since_epoch) {
    return system_clock::time_point{std::chrono::seconds{seconds_since_epoch}};
}

// Chosen where the calendar and the zones are hardest: both ends of
// system_clock's range (1677, before Berlin's first transition, and 2262),
// 1900, the epoch, a leap day, just before and inside Berlin's 2024
// daylight-saving changes (with a fraction of a second), and the end of the
// transitions a "fat" tz file lists.
const std::array<system_clock::time_point, 9> query_times{
    system_clock::time_point::min(),
    at_seconds(-2208988800),                    // 1900-01-01T00:00:00Z
    at_seconds(0),
    at_seconds(951782400),                      // 2000-02-29T00:00:00Z
    at_seconds(1711846799),                     // 2024-03-31T00:59:59Z, Berlin springs forward at 01:00Z
    at_seconds(1729989000) + 500ms,             // 2024-10-27T00:30:00.5Z, inside Berlin's repeated hour
    at_seconds(2145916800),                     // 2038-01-01T00:00:00Z
    at_seconds(9214646400),                     // 2262-01-01T00:00:00Z, months before system_clock ends
    system_clock::time_point::max() - 1s,
};
constexpr std::array<std::string_view, 2> zones{"UTC", "Europe/Berlin"};

std::string describe(system_clock::time_point t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count()) +
           " ns since the epoch";
}

void check_occurrences(const cronoq::CronExpr& expr, std::string_view input) {
    for (const std::string_view zone : zones) {
        for (const system_clock::time_point t : query_times) {
            const auto next = expr.next_after(t, zone);
            if (!next) continue;
            const std::string where = std::string(zone) + ", from " + describe(t) + " to " + describe(*next);
            if (*next <= t) broken("next_after is not strictly after the query", input, where);
            if (next->time_since_epoch() % 1s != 0s) broken("next_after is not a whole second", input, where);
            // One second before, but not before the query (nor system_clock's start).
            const auto before = *next >= system_clock::time_point::min() + 1s ? std::max(*next - 1s, t) : t;
            const auto again = expr.next_after(before, zone);
            if (again != next) {
                broken("next_after from one second before an occurrence does not find it", input,
                       where + ", again " + (again ? describe(*again) : std::string("none")));
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    std::optional<cronoq::CronExpr> expr;
    try {
        expr = cronoq::CronExpr::parse(input);
    } catch (const cronoq::ConfigError&) {
        return 0;  // rejected with the documented error: fine
    }
    const std::string normalized = expr->to_string();
    std::optional<cronoq::CronExpr> reparsed;
    try {
        reparsed = cronoq::CronExpr::parse(normalized);
    } catch (const cronoq::ConfigError& e) {
        broken("the normalized text does not parse", input, normalized + ": " + e.what());
    }
    if (reparsed->to_string() != normalized) {
        broken("normalizing twice changes the text", input, normalized + " then " + reparsed->to_string());
    }
    if (!(*reparsed == *expr)) broken("parse(to_string()) differs from the expression", input, normalized);
    check_occurrences(*expr, input);
    return 0;
}
