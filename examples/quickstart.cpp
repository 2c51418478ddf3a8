// cronoq quick start: five short scenes on one io_context, on the real clock.
//
//   (a) priority classes      (b) retries with backoff   (c) a deadline
//   (d) a per-attempt timeout (e) cancellation of a running task
//
// Each scene builds a scheduler with one pool, submits tasks, waits for their
// ends and shuts the scheduler down, so io_context::run() returns at the end.
// Executors print as they run; each scene prints its outcome after shutdown,
// when every attempt coroutine has returned. The program checks what it
// claims: it exits 1 if anything happened other than as printed here.
#include <cronoq/cronoq.hpp>

#include "example_support.hpp"

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

using namespace std::chrono_literals;
using example::check;
using example::sleep_for;
using cronoq::Priority;
using cronoq::Result;
using cronoq::RetryPolicy;
using cronoq::TaskContext;
using cronoq::TaskError;
using cronoq::TaskFailure;
using cronoq::TaskStatus;

// Payload: a task's name. Output: a line of text.
using Sched = cronoq::Scheduler<std::string, std::string>;
using Workers = cronoq::Pool<std::string, std::string>;
using Job = cronoq::Task<std::string>;
using Name = std::shared_ptr<const std::string>;

namespace {

long long ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

std::string name_of(TaskStatus s) { return std::string(cronoq::to_string(s)); }

// ---- (a) priority classes -------------------------------------------------------

// Waits for the task's end; the TaskFailure it ended with, if any.
asio::awaitable<std::optional<TaskFailure>> failure_of(cronoq::TaskHandle<std::string> handle) {
    try {
        co_await handle.result();
    } catch (const TaskFailure& f) {
        co_return f;
    }
    co_return std::nullopt;
}

asio::awaitable<void> priority_classes() {
    std::puts("(a) Priority classes: one worker; a blocker runs while Low, Normal, High and\n"
              "    Critical tasks are submitted in that order");
    auto order = std::make_shared<std::vector<std::string>>();
    // In a statement of its own: GCC 12 miscompiles a co_await that shares a
    // full-expression with a capturing lambda passed by value (see README).
    const auto ex = co_await asio::this_coro::executor;
    auto sched = Sched::builder()
                     .pool(Workers("main").workers(1, 1, 1).executor_fn(
                         [order](TaskContext, Name name) -> asio::awaitable<Result<std::string>> {
                             if (*name == "blocker") {
                                 std::puts("  blocker: running for 50 ms");
                                 co_await sleep_for(50ms);
                             } else {
                                 std::printf("  ran %s\n", name->c_str());
                                 order->push_back(*name);
                             }
                             co_return *name;
                         }))
                     .build(ex);

    std::vector<cronoq::TaskHandle<std::string>> handles;
    handles.push_back(co_await sched.submit(Job("blocker")));
    for (Priority p : {Priority::Low, Priority::Normal, Priority::High, Priority::Critical})
        handles.push_back(co_await sched.submit(Job(cronoq::to_string(p)).priority(p)));
    for (auto& h : handles) co_await h.result();
    co_await sched.shutdown(1s);

    const std::vector<std::string> expected{"critical", "high", "normal", "low"};
    check(*order == expected, "the queued tasks ran critical, high, normal, low");
}

// ---- (b) retries with backoff ----------------------------------------------------

asio::awaitable<void> retries() {
    std::puts("\n(b) Retries: a flaky task fails retryably twice, then succeeds;\n"
              "    RetryPolicy{4 attempts, 50 ms initial backoff, x2.0, 200 ms cap, no jitter}");
    const auto t0 = std::chrono::steady_clock::now();
    const auto ex = co_await asio::this_coro::executor;
    auto sched = Sched::builder()
                     .pool(Workers("main").executor_fn(
                         [t0](TaskContext ctx, Name) -> asio::awaitable<Result<std::string>> {
                             std::printf("  attempt %u at +%lld ms: ", ctx.attempt(), ms_since(t0));
                             if (ctx.attempt() < 3) {
                                 std::puts("fails with TaskError::retryable(\"upstream busy\")");
                                 co_return TaskError::retryable("upstream busy");
                             }
                             std::puts("succeeds");
                             co_return "done on attempt " + std::to_string(ctx.attempt());
                         }))
                     .build(ex);
    auto events = sched.subscribe();
    const auto wall0 = std::chrono::system_clock::now();

    auto handle = co_await sched.submit(Job("flaky").retry(RetryPolicy{4, 50ms, 2.0, 200ms, false}));
    auto out = co_await handle.result();
    co_await sched.shutdown(1s);

    std::printf("  result(): \"%s\", handle.status(): %s\n", out->c_str(), name_of(handle.status()).c_str());
    std::puts("  status events from subscribe():");
    std::vector<TaskStatus> seen;
    while (auto e = events.try_next()) {
        if (e->id != handle.id()) continue;
        seen.push_back(e->status);
        const auto at = static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(e->at - wall0).count());
        std::printf("    +%4lld ms  %-9s attempt %u%s%s\n", at, name_of(e->status).c_str(), e->attempt,
                    e->message.empty() ? "" : "  ", e->message.c_str());
    }
    using enum TaskStatus;
    const std::vector<TaskStatus> expected{Ready, Running, Retrying, Ready, Running, Retrying, Ready, Running, Succeeded};
    check(*out == "done on attempt 3", "the third attempt produced the output");
    check(handle.status() == Succeeded, "the task ended succeeded");
    check(seen == expected, "the events went ready, running, retrying (x2), then succeeded");
}

// ---- (c) a deadline --------------------------------------------------------------

asio::awaitable<void> deadline() {
    std::puts("\n(c) Deadlines: one worker; behind a blocker wait three older Normal tasks,\n"
              "    a Normal task due in 1 h and a Normal task due in 1.5 s (duration_hint 500 ms,\n"
              "    so its latest start is 1 s away: inside the 5 s urgency window)");
    auto order = std::make_shared<std::vector<std::string>>();
    const auto ex = co_await asio::this_coro::executor;
    auto sched = Sched::builder()
                     .pool(Workers("main").executor_fn([order](TaskContext ctx, Name name) -> asio::awaitable<Result<std::string>> {
                         if (*name == "blocker") {
                             co_await sleep_for(50ms);
                             co_return *name;
                         }
                         order->push_back(*name);
                         if (auto due = ctx.deadline()) {
                             const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 *due - std::chrono::system_clock::now());
                             std::printf("  ran %-8s ctx.deadline() is %lld ms away\n", name->c_str(),
                                         static_cast<long long>(left.count()));
                         } else {
                             std::printf("  ran %-8s no deadline\n", name->c_str());
                         }
                         co_return *name;
                     }))
                     .build(ex);

    std::vector<cronoq::TaskHandle<std::string>> handles;
    handles.push_back(co_await sched.submit(Job("blocker")));
    for (const char* name : {"older-1", "older-2", "older-3"}) handles.push_back(co_await sched.submit(Job(name)));
    handles.push_back(co_await sched.submit(Job("due-1h").deadline_in(1h).duration_hint(500ms)));
    handles.push_back(co_await sched.submit(Job("due-1.5s").deadline_in(1500ms).duration_hint(500ms)));
    for (auto& h : handles) co_await h.result();
    co_await sched.shutdown(1s);

    const std::vector<std::string> expected{"due-1.5s", "older-1", "older-2", "older-3", "due-1h"};
    check(*order == expected, "the near deadline ran first; the far one kept its FIFO place");
}

// ---- (d) a per-attempt timeout ---------------------------------------------------

asio::awaitable<void> timeout() {
    std::puts("\n(d) Timeouts: Task::timeout(100 ms); the executor waits 1 s on an asio::steady_timer;\n"
              "    RetryPolicy{2 attempts, 50 ms backoff}");
    const auto t0 = std::chrono::steady_clock::now();
    auto aborted = std::make_shared<int>(0);
    const auto ex = co_await asio::this_coro::executor;
    auto sched = Sched::builder()
                     .pool(Workers("main").executor_fn(
                         [t0, aborted](TaskContext ctx, Name) -> asio::awaitable<Result<std::string>> {
                             std::printf("  attempt %u at +%lld ms: waiting 1 s\n", ctx.attempt(), ms_since(t0));
                             try {
                                 co_await sleep_for(1s);
                             } catch (const std::system_error& e) {
                                 if (e.code() == asio::error::operation_aborted) ++*aborted;
                                 std::printf("  attempt %u at +%lld ms: the wait ended with \"%s\"; ctx.is_cancelled() = %s\n",
                                             ctx.attempt(), ms_since(t0), e.code().message().c_str(),
                                             ctx.is_cancelled() ? "true" : "false");
                                 // The engine has already counted this attempt as timed
                                 // out; what it returns now is ignored.
                                 co_return TaskError::cancelled();
                             }
                             co_return "finished in time";
                         }))
                     .build(ex);

    auto handle = co_await sched.submit(Job("slow").timeout(100ms).retry(RetryPolicy{2, 50ms, 2.0, 200ms, false}));
    auto outcome = failure_of(handle);
    const std::optional<TaskFailure> failure = co_await std::move(outcome);
    co_await sched.shutdown(1s);

    if (failure)
        std::printf("  result() threw TaskFailure: \"%s\" (attempts: %u)\n", failure->what(), failure->attempt());
    std::printf("  handle.status(): %s\n", name_of(handle.status()).c_str());
    check(failure.has_value(), "result() threw TaskFailure");
    check(failure && failure->status() == TaskStatus::DeadLettered && failure->message() == "timeout",
          "the task was dead-lettered with \"timeout\"");
    check(failure && failure->attempt() == 2, "both attempts ran");
    check(*aborted == 2, "Asio cancellation aborted the timer wait of both attempts");
}

// ---- (e) cancellation --------------------------------------------------------------

asio::awaitable<void> cancellation() {
    std::puts("\n(e) Cancellation: a task that would work for 10 s is cancelled with handle.cancel()");
    const auto t0 = std::chrono::steady_clock::now();
    auto started = std::make_shared<bool>(false);
    auto noticed = std::make_shared<bool>(false);
    const auto ex = co_await asio::this_coro::executor;
    auto sched = Sched::builder()
                     .pool(Workers("main").executor_fn(
                         [t0, started, noticed](TaskContext ctx, Name) -> asio::awaitable<Result<std::string>> {
                             std::printf("  attempt %u at +%lld ms: co_await cronoq::with_cancellation(ctx, work)\n",
                                         ctx.attempt(), ms_since(t0));
                             *started = true;
                             auto work = sleep_for(10s);
                             Result<void> worked = co_await cronoq::with_cancellation(ctx, std::move(work));
                             if (!worked) {
                                 *noticed = true;
                                 std::printf("  attempt %u at +%lld ms: the attempt was cancelled first, the work "
                                             "stopped; co_return TaskError::cancelled()\n",
                                             ctx.attempt(), ms_since(t0));
                                 co_return worked.error();
                             }
                             co_return "worked for 10 s";
                         }))
                     .build(ex);

    auto handle = co_await sched.submit(Job("long"));
    for (int i = 0; i < 200 && !*started; ++i) co_await sleep_for(5ms);
    const bool running = *started;
    co_await sleep_for(100ms);
    const bool accepted = handle.cancel();
    std::printf("  main at +%lld ms: handle.cancel() returned %s\n", ms_since(t0), accepted ? "true" : "false");
    auto outcome = failure_of(handle);
    const std::optional<TaskFailure> failure = co_await std::move(outcome);
    co_await sched.shutdown(1s);

    if (failure) std::printf("  result() threw TaskFailure: \"%s\"\n", failure->what());
    std::printf("  handle.status(): %s\n", name_of(handle.status()).c_str());
    check(running, "the attempt started");
    check(accepted, "cancel() accepted the running task");
    check(*noticed, "with_cancellation returned TaskError::cancelled()");
    check(handle.status() == TaskStatus::Cancelled, "the task ended cancelled");
    check(failure && failure->status() == TaskStatus::Cancelled, "result() threw TaskFailure(cancelled)");
}

asio::awaitable<void> all_scenes() {
    co_await priority_classes();
    co_await retries();
    co_await deadline();
    co_await timeout();
    co_await cancellation();
}

}  // namespace

int main() {
    const int rc = example::run_example("quickstart", [](asio::io_context&) { return all_scenes(); });
    if (rc == 0) std::puts("All scenes behaved as described.");
    return rc;
}
