#pragma once
// What the benchmark files share: io_context threads kept running, a wait
// that takes a stuck batch for a hang, the check of a batch's sum, and the
// batch that submits many integer tasks and sums their outputs.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression;
// every awaitable is named first.
#include <cronoq/scheduler.hpp>
#include <cronoq/task.hpp>

#include <asio/awaitable.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cronoq_bench {

/// Sum of 0..n-1: what the outputs of a batch of tasks 0..n-1 add up to.
constexpr std::int64_t expected_sum(int n) { return static_cast<std::int64_t>(n) * (n - 1) / 2; }

/// Returns once `f` is ready. A batch not done within `limit` is taken for a
/// hang: the run ends with a message instead of blocking (CI runs these
/// benchmarks), without an orderly teardown, since the io_context threads
/// are stuck.
template <class T>
void wait_or_abort(std::future<T>& f, const char* what, std::chrono::seconds limit) {
    if (f.wait_for(limit) == std::future_status::ready) return;
    std::fprintf(stderr, "%s: not done after %lld s, taken for a hang\n", what, static_cast<long long>(limit.count()));
    std::_Exit(EXIT_FAILURE);
}

/// Empty if the future's value is `expected`, else what went wrong.
inline std::string check_sum(std::future<std::int64_t>& done, std::int64_t expected, const char* what,
                             std::chrono::seconds limit) {
    wait_or_abort(done, what, limit);
    try {
        const std::int64_t sum = done.get();
        if (sum == expected) return {};
        return std::string(what) + ": wrong sum " + std::to_string(sum) + ", expected " + std::to_string(expected);
    } catch (const std::exception& e) {
        return std::string(what) + ": " + e.what();
    }
}

/// io_context threads kept running (a work guard) until stop().
class Runners {
public:
    Runners(asio::io_context& io, int threads) : guard_(asio::make_work_guard(io)) {
        for (int i = 0; i < threads; ++i) threads_.emplace_back([&io] { io.run(); });
    }
    Runners(const Runners&) = delete;
    Runners& operator=(const Runners&) = delete;
    ~Runners() { stop(); }
    void stop() {
        guard_.reset();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

private:
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::vector<std::thread> threads_;
};

/// Submits tasks 0..n-1 in one try_submit_many, then awaits every result
/// and returns their sum; `last_first` awaits them from the last submitted
/// (remote_bench.cpp says why).
template <class Sched>
asio::awaitable<std::int64_t> submit_many_and_sum(Sched sched, int n, bool last_first = false) {
    std::vector<cronoq::Task<int>> tasks;
    tasks.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) tasks.emplace_back(i);
    auto submitted = sched.try_submit_many(std::move(tasks));
    if (submitted.size() != static_cast<std::size_t>(n)) throw std::runtime_error("try_submit_many: wrong result count");
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < submitted.size(); ++k) {
        auto& r = submitted[last_first ? submitted.size() - 1 - k : k];
        if (!r) throw std::runtime_error("try_submit_many: " + r.message());
        auto wait = r.value().result();
        std::shared_ptr<const int> out = co_await std::move(wait);
        sum += *out;
    }
    co_return sum;
}

/// Tasks 0..n-1, one at a time (each submitted once the previous result
/// came back); returns the sum of their outputs.
template <class Sched>
asio::awaitable<std::int64_t> one_at_a_time(Sched sched, int n) {
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        auto submitted = sched.try_submit(cronoq::Task<int>(i));
        if (!submitted) throw std::runtime_error("try_submit: " + submitted.message());
        auto wait = submitted.value().result();
        std::shared_ptr<const int> out = co_await std::move(wait);
        sum += *out;
    }
    co_return sum;
}

}  // namespace cronoq_bench
