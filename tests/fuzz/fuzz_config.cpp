// A Scheduler<int, int> configuration decoded from arbitrary bytes: pools
// (names, workers, retry policy, timeouts), the priority and urgency
// constants, retention, and one task's own settings. Numbers favour the
// values where validation and time arithmetic slip: NaN, infinities,
// negatives, zero and the extremes of their types.
//
// Promises checked (a broken one aborts, so libFuzzer keeps the input):
// - build() either succeeds or throws ConfigError (any other exception
//   escapes to libFuzzer), and a failed build leaves no work on the
//   io_context;
// - after a successful build, try_submit either admits the task or reports
//   an error; then shutdown completes, the admitted task has a terminal
//   status, and the io_context runs out of work.
// Time is a ManualClock, advanced a bounded number of steps, so that a
// retry backoff or a timeout of centuries costs nothing.
#include <cronoq/cronoq.hpp>

#include <fuzzer/FuzzedDataProvider.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace cronoq;
using Sched = Scheduler<int, int>;
using Nanos = std::chrono::nanoseconds;

[[noreturn]] void broken(const char* promise) {
    std::fprintf(stderr, "fuzz_config: %s\n", promise);
    std::abort();
}

double decode_number(FuzzedDataProvider& in) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    static constexpr std::array<double, 11> special{
        std::numeric_limits<double>::quiet_NaN(), inf, -inf, -0.0, 0.0, -1.0, 1.0, 2.0,
        std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
        std::numeric_limits<double>::lowest()};
    switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: return in.PickValueInArray(special);
    case 1: return in.ConsumeFloatingPointInRange(-10.0, 20000.0);
    default: return in.ConsumeFloatingPoint<double>();
    }
}

Nanos decode_duration(FuzzedDataProvider& in) {
    using Rep = Nanos::rep;
    static constexpr std::array<Rep, 11> special{
        0, -1, 1, 1'000, 1'000'000, 1'000'000'000, 3'600'000'000'000,
        std::numeric_limits<Rep>::max(), std::numeric_limits<Rep>::min(), std::numeric_limits<Rep>::max() / 2,
        std::numeric_limits<Rep>::min() / 2};
    switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: return Nanos{in.PickValueInArray(special)};
    case 1: return Nanos{in.ConsumeIntegralInRange<Rep>(-1'000'000'000, 10'000'000'000)};
    default: return Nanos{in.ConsumeIntegral<Rep>()};
    }
}

std::size_t decode_count(FuzzedDataProvider& in) {
    static constexpr std::array<std::size_t, 5> special{
        0, 1, 64, std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() / 2};
    switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: return in.PickValueInArray(special);
    case 1: return in.ConsumeIntegralInRange<std::size_t>(0, 8);
    default: return in.ConsumeIntegral<std::size_t>();
    }
}

// Half the time a name already used, so that duplicates come up often.
std::string decode_name(FuzzedDataProvider& in, const std::vector<std::string>& used) {
    if (!used.empty() && in.ConsumeBool()) return used[in.ConsumeIntegralInRange<std::size_t>(0, used.size() - 1)];
    return in.ConsumeRandomLengthString(12);
}

RetryPolicy decode_retry(FuzzedDataProvider& in) {
    RetryPolicy policy;
    policy.max_attempts = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::uint32_t>(0, 4)
                                           : in.ConsumeIntegral<std::uint32_t>();
    policy.initial_backoff = decode_duration(in);
    policy.multiplier = decode_number(in);
    policy.max_backoff = decode_duration(in);
    policy.jitter = in.ConsumeBool();
    return policy;
}

// The payload scripts each attempt; retryable failures stop after the third
// attempt so that a policy of 4 billion attempts still ends.
asio::awaitable<Result<int>> scripted(TaskContext ctx, std::shared_ptr<const int> payload) {
    const auto script = static_cast<unsigned>(*payload);
    if (ctx.attempt() > 3) co_return 0;
    switch (script % 6) {
    case 0: co_return *payload;
    case 1: co_return TaskError::retryable("scripted");
    case 2: co_return TaskError::retry_after("scripted", Nanos{static_cast<std::int64_t>(script) * 1000});
    case 3: co_return TaskError::permanent("scripted");
    case 4: co_return TaskError::cancelled();
    default: throw std::runtime_error("scripted");
    }
}

Pool<int, int> decode_pool(FuzzedDataProvider& in, std::vector<std::string>& names) {
    names.push_back(decode_name(in, names));
    Pool<int, int> pool(names.back());
    if (in.ConsumeIntegralInRange(0, 7) != 0) pool.executor_fn(scripted);  // rarely: none, a ConfigError
    if (in.ConsumeBool()) pool.workers(decode_count(in), decode_count(in), decode_count(in));
    if (in.ConsumeBool()) pool.retry(decode_retry(in));
    if (in.ConsumeBool()) pool.default_timeout(decode_duration(in));
    if (in.ConsumeBool()) pool.lease_ttl(decode_duration(in));
    if (in.ConsumeBool()) pool.default_duration(decode_duration(in));
    return pool;
}

void decode_scheduler_options(FuzzedDataProvider& in, Sched::Builder& builder) {
    if (in.ConsumeBool()) {
        PriorityConfig priority;
        for (double& base : priority.base) base = decode_number(in);
        priority.aging_rate = decode_number(in);
        priority.age_cap = decode_number(in);
        if (in.ConsumeBool())
            for (double& share : priority.min_share) share = decode_number(in);
        builder.priority(priority);
    }
    if (in.ConsumeBool()) {
        UrgencyConfig urgency;
        urgency.window = decode_duration(in);
        urgency.max = decode_number(in);
        urgency.overdue_rate = decode_number(in);
        urgency.overdue_cap = decode_number(in);
        if (in.ConsumeBool()) urgency.window_factor = decode_number(in);
        builder.urgency(urgency);
    }
    if (in.ConsumeBool()) builder.retention(decode_duration(in));
    if (in.ConsumeBool()) builder.retention_max(decode_count(in));
    if (in.ConsumeBool()) builder.event_capacity(decode_count(in));
    builder.seed(in.ConsumeIntegral<std::uint64_t>());
}

Task<int> decode_task(FuzzedDataProvider& in, const std::vector<std::string>& names) {
    Task<int> task(in.ConsumeIntegral<int>());
    if (in.ConsumeBool()) task.pool(decode_name(in, names));
    task.priority(static_cast<Priority>(in.ConsumeIntegralInRange<std::size_t>(0, priority_count - 1)));
    if (in.ConsumeBool()) task.timeout(decode_duration(in));
    if (in.ConsumeBool()) task.retry(decode_retry(in));
    if (in.ConsumeBool()) task.duration_hint(decode_duration(in));
    switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: break;
    case 1: task.deadline_in(decode_duration(in)); break;
    default: task.deadline_at(std::chrono::system_clock::time_point{decode_duration(in)}); break;
    }
    if (in.ConsumeBool()) task.key(in.ConsumeRandomLengthString(8));
    return task;
}

// Runs `io` and advances `clock` to its next timer until `done` or `steps`
// timers have fired; returns whether `done`.
bool run_until(asio::io_context& io, ManualClock& clock, const bool& done, int steps) {
    for (int step = 0;; ++step) {
        io.restart();
        io.poll();
        if (done) return true;
        if (step == steps || !clock.advance_to_next()) return false;
    }
}

}  // namespace

// The scripted executors panic and fail on purpose; logging each one would
// only slow the fuzzer down.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    set_logger(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    asio::io_context io;
    auto clock = std::make_shared<ManualClock>();
    auto builder = Sched::builder();
    builder.clock(clock);
    std::vector<std::string> names;
    const int pool_count = in.ConsumeIntegralInRange(0, 3);
    for (int i = 0; i < pool_count; ++i) builder.pool(decode_pool(in, names));
    decode_scheduler_options(in, builder);
    const Nanos grace = decode_duration(in);
    Task<int> task = decode_task(in, names);

    std::optional<Sched> sched;
    try {
        sched.emplace(builder.build(io.get_executor()));
    } catch (const ConfigError&) {
        if (io.run() != 0) broken("a failed build left work on the io_context");
        return 0;
    }
    auto submitted = sched->try_submit(std::move(task));
    const bool never_done = false;
    run_until(io, *clock, never_done, 8);  // a few retries and timeouts, in virtual time

    bool shut_down = false;
    auto shutdown = [scheduler = *sched, grace, &shut_down]() mutable -> asio::awaitable<void> {
        auto op = scheduler.shutdown(grace);
        co_await std::move(op);
        shut_down = true;
    };
    asio::co_spawn(io, shutdown, asio::detached);
    // The grace period runs on the ManualClock too: the first timer past it
    // ends the shutdown, so a handful of steps is plenty.
    if (!run_until(io, *clock, shut_down, 64)) broken("shutdown did not complete");
    if (submitted && !is_terminal(submitted.value().status())) broken("the task has no terminal status after shutdown");
    sched.reset();
    io.restart();
    io.run();  // must return, nothing being left pending (a hang is a libFuzzer timeout)
    return 0;
}
