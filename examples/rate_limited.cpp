// cronoq rate limiting: calls to a fake API that accepts at most 20
// requests per second, through a token bucket.
//
// The bucket starts optimistic (40 per second, burst 5). The fake API
// answers "429 Too Many Requests" with a Retry-After when a second is over
// its limit; the executor then returns `TaskError::retry_after(...)` (a
// retryable failure whose backoff is at least that long) and lowers the
// bucket to the advertised rate with `set_rate`. Every call ends
// succeeded, and the snapshot printed at the end, as JSON, counts what
// happened. The program checks its claims and exits 1 if one does not hold.
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
#include <vector>

using namespace std::chrono_literals;
using example::check;
using example::sleep_for;
using cronoq::Result;
using cronoq::TaskContext;
using cronoq::TaskError;

namespace {

// The API's own limit: at most `per_second` requests in each wall-clock
// second (a fixed window, as many APIs count).
class FakeApi {
public:
    explicit FakeApi(int per_second) : per_second_(per_second) {}

    // The answer to one request: empty if accepted, else the Retry-After.
    std::optional<std::chrono::milliseconds> call() {
        const auto now = std::chrono::steady_clock::now();
        if (now - window_start_ >= 1s) {
            window_start_ = now;
            in_window_ = 0;
        }
        if (++in_window_ <= per_second_) {
            ++accepted;
            return std::nullopt;
        }
        ++rejected;
        return std::chrono::duration_cast<std::chrono::milliseconds>(1s - (now - window_start_));
    }

    int per_second() const { return per_second_; }
    int accepted = 0;
    int rejected = 0;

private:
    int per_second_;
    std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
    int in_window_ = 0;
};

using Sched = cronoq::Scheduler<int, std::string>;

asio::awaitable<void> demo(asio::io_context& io) {
    auto api = std::make_shared<FakeApi>(20);
    auto lowered = std::make_shared<bool>(false);
    auto sched = std::make_shared<std::optional<Sched>>();
    auto call_api = [api, lowered, sched](TaskContext ctx, std::shared_ptr<const int> n) -> asio::awaitable<Result<std::string>> {
        asio::steady_timer latency(co_await asio::this_coro::executor, 2ms);
        co_await latency.async_wait(asio::use_awaitable);
        if (auto retry_after = api->call()) {
            if (!*lowered) {
                *lowered = true;
                std::printf("  call %2d: 429, retry after %lld ms; lowering the bucket to %d/s\n", *n,
                            static_cast<long long>(retry_after->count()), api->per_second());
                (*sched)->set_rate("api", api->per_second());
            }
            co_return TaskError::retry_after("429 Too Many Requests", *retry_after);
        }
        co_return "call " + std::to_string(*n) + " ok on attempt " + std::to_string(ctx.attempt());
    };
    sched->emplace(Sched::builder()
                       .resource(cronoq::Resource::token_bucket("api", 40.0, 5))
                       .pool(cronoq::Pool<int, std::string>("http")
                                 .workers(1, 8, 8)
                                 .retry(cronoq::RetryPolicy{10, 50ms, 2.0, 2s, true})
                                 .executor_fn(call_api))
                       .build(io.get_executor()));
    Sched& s = **sched;

    const int calls = 60;
    const auto t0 = std::chrono::steady_clock::now();
    std::printf("%d calls to an API that accepts 20 per second\n", calls);
    std::vector<cronoq::TaskHandle<std::string>> handles;
    for (int i = 0; i < calls; ++i) handles.push_back(s.try_submit(cronoq::Task<int>(i).resource("api", 1)).value());
    int ok = 0;
    for (auto& h : handles) {
        auto result = h.result();
        auto out = co_await std::move(result);
        if (out) ++ok;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("all %d calls succeeded in %.1f s; the API accepted %d and rejected %d\n", ok, seconds, api->accepted,
                api->rejected);

    const cronoq::Snapshot snap = s.snapshot();
    std::printf("snapshot:\n%s\n", snap.to_json_string(2).c_str());
    const cronoq::PoolSnapshot& http = snap.pools.front();
    check(ok == calls, "every call succeeded");
    check(*lowered, "a 429 lowered the bucket's rate");
    check(http.succeeded == static_cast<std::uint64_t>(calls), "the snapshot counts every success");
    check(http.retried == static_cast<std::uint64_t>(api->rejected), "the snapshot counts one retry per 429");
    check(http.dispatched == static_cast<std::uint64_t>(api->accepted + api->rejected),
          "the snapshot counts every request as a dispatch");
    // 60 calls at 20 per second after a burst: about 2.5 s or more.
    check(seconds > 2.0, "the bucket spread the calls over time");

    auto stop = s.shutdown(1s);
    co_await std::move(stop);
    sched->reset();
}

}  // namespace

int main() { return example::run_example("rate_limited", demo); }
