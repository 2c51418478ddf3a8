// cronoq_soak: pushes many tasks (1 000 000 by default) through a Scheduler
// on an io_context run by two threads, with seeded outcomes: successes,
// retries with microsecond backoff, dead letters, permanent failures,
// throwing executors, and cancellations by id from another thread. At most
// `--in-flight` tasks are unfinished at once; the submitting thread waits
// for results. Afterwards every task must have ended exactly once, as its
// plan allows, with handle results, the status event stream and the
// engine's counters in agreement, and io_context::run() must return in
// every thread after shutdown. Prints one summary line; exits 1 on any
// violation, 2 on bad arguments.
//
//   cronoq_soak [--tasks N] [--seed S] [--in-flight N]
//
// GCC 12 (see the README): every awaitable is named before it is awaited.
#include "ledger.hpp"
#include "plan.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/diagnostics.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <semaphore>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<soak::Plan, int>;

constexpr std::size_t io_threads = 2;
constexpr std::string_view pool_name = "soak";
// Tiny backoff, so that retries go through the scheduler's timer path
// without slowing the run.
constexpr cronoq::RetryPolicy retry_policy{3, std::chrono::microseconds(1), 2.0, std::chrono::microseconds(10), false};
// How long shutdown, and then io_context::run(), may take before the run
// counts as hung.
constexpr auto hang_limit = 60s;

struct Options {
    std::uint32_t tasks = 1'000'000;
    std::uint64_t seed = 1;
    std::ptrdiff_t in_flight = 10'000;
};

std::optional<Options> parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (i + 1 >= argc) return std::nullopt;
        const std::string value = argv[++i];
        char* end = nullptr;
        const unsigned long long number = std::strtoull(value.c_str(), &end, 10);
        if (end == value.c_str() || *end != '\0' || number == 0) return std::nullopt;
        if (arg == "--tasks" && number <= 100'000'000) {
            options.tasks = static_cast<std::uint32_t>(number);
        } else if (arg == "--seed") {
            options.seed = number;
        } else if (arg == "--in-flight" && number <= 1'000'000) {
            options.in_flight = static_cast<std::ptrdiff_t>(number);
        } else {
            return std::nullopt;
        }
    }
    return options;
}

/// Cancels tasks by id on its own thread, in the order it is given them.
class Canceller {
public:
    explicit Canceller(Sched sched) : sched_(std::move(sched)), thread_([this] { loop(); }) {}
    ~Canceller() { finish(); }

    void push(cronoq::TaskId id) {
        {
            const std::lock_guard lock(mu_);
            ids_.push_back(id);
        }
        wake_.notify_one();
    }
    /// Cancels what is queued, then stops the thread.
    void finish() {
        {
            const std::lock_guard lock(mu_);
            done_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable()) thread_.join();
    }

private:
    void loop() {
        std::unique_lock lock(mu_);
        for (;;) {
            wake_.wait(lock, [this] { return done_ || !ids_.empty(); });
            if (ids_.empty()) return;
            const cronoq::TaskId id = ids_.front();
            ids_.pop_front();
            lock.unlock();
            sched_.cancel(id);  // false when the racing task already ended: fine
            lock.lock();
        }
    }

    Sched sched_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::deque<cronoq::TaskId> ids_;
    bool done_ = false;
    std::thread thread_;
};

// Records the handle's end in the ledger, then frees an in-flight place.
asio::awaitable<void> await_result(cronoq::TaskHandle<int> handle, std::uint32_t index, soak::Ledger& ledger,
                                   std::counting_semaphore<>& in_flight) {
    cronoq::TaskStatus status = cronoq::TaskStatus::Succeeded;
    try {
        auto wait = handle.result();
        const std::shared_ptr<const int> out = co_await std::move(wait);
        if (!out || *out != static_cast<int>(index)) ledger.wrong_outputs.fetch_add(1);
    } catch (const cronoq::TaskFailure& failure) {
        status = failure.status();
    }
    ledger.handle_status[index] = static_cast<std::uint8_t>(status);
    in_flight.release();
}

// Counts terminal events per task id until the stream closes at shutdown.
asio::awaitable<void> record_events(cronoq::EventStream stream, soak::Ledger& ledger) {
    for (;;) {
        auto next = stream.next();
        const std::optional<cronoq::StatusEvent> event = co_await std::move(next);
        if (!event) break;
        ++ledger.events_seen;
        if (!cronoq::is_terminal(event->status)) continue;
        auto& record = ledger.events[event->id.value];
        ++record.terminal_events;
        record.last_terminal = event->status;
    }
    ledger.events_dropped = stream.dropped();
}

asio::awaitable<void> shut_down(Sched sched) {
    auto op = sched.shutdown(1s);
    co_await std::move(op);
}

}  // namespace

int main(int argc, char** argv) {
    const std::optional<Options> options = parse_options(argc, argv);
    if (!options) {
        std::fprintf(stderr, "usage: cronoq_soak [--tasks N] [--seed S] [--in-flight N]  (N >= 1)\n");
        return 2;
    }
    // The throwing executors are planned; their "executor panic" warnings
    // would only flood stderr.
    cronoq::set_logger(nullptr);
    const auto started = std::chrono::steady_clock::now();
    soak::Ledger ledger(options->tasks);
    soak::Violations violations;

    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    // Room for every event of every task, so that none is dropped even if
    // the recording coroutine falls behind; it is checked below.
    const std::size_t event_capacity = static_cast<std::size_t>(options->tasks) * 8;
    auto sched = Sched::builder()
                     .pool(cronoq::Pool<soak::Plan, int>(std::string(pool_name))
                               .workers(1, 64, 64)
                               .retry(retry_policy)
                               .executor_fn(soak::run_plan))
                     .event_capacity(event_capacity)
                     .seed(options->seed)
                     .build(io.get_executor());
    auto events_done = asio::co_spawn(io, record_events(sched.subscribe(), ledger), asio::use_future);

    std::vector<std::future<void>> run_returned;
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < io_threads; ++i) {
        std::packaged_task<void()> run([&io] { io.run(); });
        run_returned.push_back(run.get_future());
        threads.emplace_back(std::move(run));
    }

    std::counting_semaphore<> in_flight(options->in_flight);
    {
        Canceller canceller(sched);
        std::mt19937_64 rng(options->seed);
        for (std::uint32_t i = 0; i < options->tasks; ++i) {
            in_flight.acquire();
            const soak::Plan plan = soak::draw_plan(i, rng);
            ledger.plans[i] = plan;
            const auto priority = static_cast<cronoq::Priority>(rng() % cronoq::priority_count);
            auto submitted = sched.try_submit(cronoq::Task<soak::Plan>(plan).priority(priority));
            if (!submitted) {
                violations.add("try_submit of task " + std::to_string(i) + ": " + submitted.message());
                ledger.handle_status[i] = static_cast<std::uint8_t>(cronoq::TaskStatus::Failed);
                in_flight.release();
                continue;
            }
            cronoq::TaskHandle<int> handle = std::move(submitted).value();
            ledger.ids[i] = handle.id();
            if (soak::is_cancelled_by_id(plan.outcome)) canceller.push(handle.id());
            asio::co_spawn(io, await_result(std::move(handle), i, ledger, in_flight), asio::detached);
        }
        for (std::ptrdiff_t i = 0; i < options->in_flight; ++i) in_flight.acquire();  // every result is in
    }

    auto shutdown_done = asio::co_spawn(io, shut_down(sched), asio::use_future);
    bool hung = false;
    if (shutdown_done.wait_for(hang_limit) != std::future_status::ready ||
        events_done.wait_for(hang_limit) != std::future_status::ready) {
        violations.add("shutdown or the event stream did not finish within " + std::to_string(hang_limit.count()) + " s");
        hung = true;
    }
    if (!hung) {
        try {
            shutdown_done.get();
            events_done.get();
        } catch (const std::exception& e) {
            violations.add(std::string("shutdown or the event stream threw: ") + e.what());
        }
    }
    guard.reset();
    for (auto& returned : run_returned) {
        if (!hung && returned.wait_for(hang_limit) != std::future_status::ready) {
            violations.add("io_context::run() did not return after shutdown");
            hung = true;
        }
    }
    if (hung) {
        std::fprintf(stderr, "cronoq_soak: FAIL (hung; %llu violations)\n",
                     static_cast<unsigned long long>(violations.count()));
        std::_Exit(1);  // the io threads cannot be joined
    }
    for (auto& t : threads) t.join();

    const auto counters = cronoq::diagnostics::counters(sched, pool_name);
    if (!counters) {
        violations.add("counters() knows no pool \"soak\"");
        return 1;
    }
    const auto by_status = soak::check_ledger(ledger, *counters, retry_policy.max_attempts, violations);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    using cronoq::TaskStatus;
    const auto count = [&](TaskStatus s) { return static_cast<unsigned long long>(by_status[static_cast<std::size_t>(s)]); };
    std::printf("cronoq_soak: %s: %u tasks (seed %llu) in %.1f s: succeeded %llu, failed %llu, dead_lettered %llu, "
                "cancelled %llu; %llu retries, %llu events, %llu violations\n",
                violations.count() == 0 ? "PASS" : "FAIL", options->tasks,
                static_cast<unsigned long long>(options->seed), seconds, count(TaskStatus::Succeeded),
                count(TaskStatus::Failed), count(TaskStatus::DeadLettered), count(TaskStatus::Cancelled),
                static_cast<unsigned long long>(counters->retried),
                static_cast<unsigned long long>(ledger.events_seen),
                static_cast<unsigned long long>(violations.count()));
    return violations.count() == 0 ? 0 : 1;
}
