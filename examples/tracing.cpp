// Tracing: each attempt as a span in the log, from Builder::observer
// (docs/guide/operations.md, "Tracing"). A submitter's W3C traceparent
// ("00-<trace id>-<parent span id>-<flags>") travels with its task; every
// attempt becomes a child span of that parent in the same trace, so the
// retries of a flaky task show up under the request that submitted it.
//
// The observer only writes lines here; docs/guide/operations.md shows the
// dozen lines that hand the same starts and ends to an OpenTelemetry SDK.
// The program checks what it claims and exits 1 otherwise.
#include <cronoq/cronoq.hpp>

#include "example_support.hpp"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using example::check;
using cronoq::Result;
using cronoq::TaskContext;
using cronoq::TaskError;

namespace {

/// A finished span, as a tracer would export it.
struct Span {
    std::string trace_id, span_id, parent_id, name, status;
    long long micros = 0;
};

/// Turns attempt starts and ends into spans. Both calls come from the
/// scheduler's threads; each end follows its start.
class LogTracer {
public:
    cronoq::AttemptObserver observer() {
        return {[this](const cronoq::AttemptStart& s) { start(s); }, [this](const cronoq::AttemptEnd& e) { end(e); }};
    }
    std::vector<Span> spans() {
        std::lock_guard lock(mu_);
        return done_;
    }

private:
    void start(const cronoq::AttemptStart& s) {
        Span span;
        // "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>": continue
        // the submitter's trace; without one, start a new trace.
        if (s.traceparent && s.traceparent->size() == 55) {
            span.trace_id = s.traceparent->substr(3, 32);
            span.parent_id = s.traceparent->substr(36, 16);
        } else {
            span.trace_id = hex(16);
        }
        span.span_id = hex(8);
        span.name = s.pool + "/" + s.kind + " attempt " + std::to_string(s.attempt);
        std::printf("span start trace=%s span=%s parent=%s %s (task %llu)\n", span.trace_id.c_str(), span.span_id.c_str(),
                    span.parent_id.empty() ? "-" : span.parent_id.c_str(), span.name.c_str(),
                    static_cast<unsigned long long>(s.task.value));
        std::lock_guard lock(mu_);
        open_[s.lease.value] = std::move(span);
    }
    void end(const cronoq::AttemptEnd& e) {
        std::lock_guard lock(mu_);
        Span span = std::move(open_.at(e.start.lease.value));
        open_.erase(e.start.lease.value);
        span.status = std::string(cronoq::to_string(e.outcome));
        span.micros = std::chrono::duration_cast<std::chrono::microseconds>(e.duration).count();
        std::printf("span end   trace=%s span=%s -> %s%s%s after %lld us\n", span.trace_id.c_str(), span.span_id.c_str(),
                    span.status.c_str(), e.message.empty() ? "" : ": ", e.message.c_str(), span.micros);
        done_.push_back(std::move(span));
    }
    std::string hex(int bytes) {
        static constexpr char digits[] = "0123456789abcdef";
        std::string out;
        for (int i = 0; i < bytes * 2; ++i) out += digits[random_() % 16];
        return out;
    }

    std::mutex mu_;
    std::mt19937_64 random_{42};
    std::map<std::uint64_t, Span> open_;  // by lease
    std::vector<Span> done_;
};

// "flaky" fails twice, then succeeds; others succeed at once.
asio::awaitable<Result<std::string>> work(TaskContext ctx, std::shared_ptr<const std::string> what) {
    if (*what == "flaky" && ctx.attempt() < 3) co_return TaskError::retryable("upstream timed out");
    co_return "done: " + *what;
}

asio::awaitable<void> demo(asio::io_context& io) {
    LogTracer tracer;
    auto sched = cronoq::Scheduler<std::string, std::string>::builder()
                     .observer(tracer.observer())
                     .pool(cronoq::Pool<std::string, std::string>("api")
                               .retry(cronoq::RetryPolicy{5, 1ms, 1.0, 1ms, false})
                               .executor_fn(work))
                     .build(io.get_executor());
    // The request that submits carries trace 4bf9...4736, its span 00f0...02b7.
    const std::string request = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto flaky = co_await sched.submit(cronoq::Task<std::string>("flaky").kind("fetch").traceparent(request));
    auto plain = co_await sched.submit(cronoq::Task<std::string>("plain").kind("render"));
    co_await flaky.result();
    co_await plain.result();
    co_await sched.shutdown(1s);

    const std::vector<Span> spans = tracer.spans();
    check(spans.size() == 4, "four spans: three attempts of the flaky task, one of the other");
    int in_request_trace = 0;
    for (const Span& s : spans)
        if (s.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736" && s.parent_id == "00f067aa0ba902b7") ++in_request_trace;
    check(in_request_trace == 3, "every attempt of the flaky task is a child of the submitting request's span");
    int retried = 0;
    for (const Span& s : spans) retried += s.status == "retrying" ? 1 : 0;
    check(retried == 2, "two attempts ended retrying");
}

}  // namespace

int main() { return example::run_example("tracing", demo); }
