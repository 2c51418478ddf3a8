// The cron engine through its public API (docs/guide/time-and-cron.md).
//
//   BM_CronParse                          CronExpr::parse over a rotating set
//                                         of realistic expressions
//   BM_CronNextOccurrence/<expr>/<zone>   next_after, each call from the
//                                         previous occurrence, as a recurring
//                                         schedule advances
//
// <expr> indexes next_expressions, <zone> indexes zones; the label names both.
#include <cronoq/cron_expr.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <string>
#include <string_view>

namespace {

using std::chrono::system_clock;

constexpr std::array<std::string_view, 8> parse_expressions{
    "*/15 * * * *",
    "0 0 29 2 *",
    "0 30 9 * * MON-FRI",
    "@daily",
    "5,10,15 1-5/2 * JAN,JUL SUN",
    "0 9-17 * * 1-5",
    "30 2 1,15 * *",
    "*/5 0-6,22,23 * * SAT,SUN",
};

void BM_CronParse(benchmark::State& state) {
    std::size_t next = 0;
    for (auto _ : state) {
        cronoq::CronExpr expr = cronoq::CronExpr::parse(parse_expressions[next]);
        benchmark::DoNotOptimize(expr);
        next = (next + 1) % parse_expressions.size();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CronParse);

// "*/15 * * * *" is a wildcard schedule (one search per quarter hour);
// "0 0 29 2 *" skips to leap years, the most calendar walking per call;
// "0 30 2 * * *" is a fixed-time schedule inside New York's spring-forward gap.
constexpr std::array<std::string_view, 5> next_expressions{
    "*/15 * * * *",
    "0 30 9 * * MON-FRI",
    "0 0 29 2 *",
    "5,10,15 1-5/2 * JAN,JUL SUN",
    "0 30 2 * * *",
};
constexpr std::array<std::string_view, 2> zones{"UTC", "America/New_York"};

system_clock::time_point start_time() {
    return system_clock::time_point{std::chrono::seconds{1704067200}};  // 2024-01-01T00:00:00Z
}

void BM_CronNextOccurrence(benchmark::State& state) {
    const std::string_view text = next_expressions.at(static_cast<std::size_t>(state.range(0)));
    const std::string_view zone = zones.at(static_cast<std::size_t>(state.range(1)));
    const cronoq::CronExpr expr = cronoq::CronExpr::parse(text);
    // Well before system_clock's end (2262): every schedule above fires in
    // each year up to here, so the walk restarts before it could run dry.
    const system_clock::time_point wrap = system_clock::time_point{std::chrono::seconds{7258118400}};  // 2200
    system_clock::time_point t = start_time();
    for (auto _ : state) {
        const auto next = expr.next_after(t, zone);
        if (!next) {
            state.SkipWithError("next_after found no occurrence");
            break;
        }
        t = *next < wrap ? *next : start_time();
    }
    state.SetItemsProcessed(state.iterations());
    state.SetLabel(std::string(text) + " @ " + std::string(zone));
}
BENCHMARK(BM_CronNextOccurrence)->ArgsProduct({{0, 1, 2, 3, 4}, {0, 1}});

}  // namespace
