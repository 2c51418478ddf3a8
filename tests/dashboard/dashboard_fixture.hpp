#pragma once
// A scheduler on a SQLite store (or, `Memory`, without one) with a
// dashboard, its io_context run by a thread of its own, for the dashboard
// tests. Payloads starting with "fail"
// fail (one attempt: they end dead-lettered); others succeed with
// "out:<payload>". Pools: "work" and "other".
#include <cronoq/cronoq.hpp>
#include <cronoq/dashboard.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include "http_client.hpp"
#include "scratch_dir.hpp"

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <thread>

namespace cronoq::test {

using Sched = Scheduler<std::string, std::string>;

class Served {
public:
    enum Keeping { Durable, Memory };

    explicit Served(DashboardConfig config = {"127.0.0.1:0", "", false}, Keeping keeping = Durable) {
        thread_ = std::thread([this] { io_.run(); });
        auto fn = [](TaskContext, std::shared_ptr<const std::string> p) -> Result<std::string> {
            if (p->starts_with("fail")) return TaskError::retryable("it failed: " + *p);
            return "out:" + *p;
        };
        auto builder = Sched::builder();
        builder.pool(Pool<std::string, std::string>("work").workers(2, 2, 2).retry(RetryPolicy::none()).executor_fn(fn))
            .pool(Pool<std::string, std::string>("other").workers(1, 1, 1).executor_fn(fn));
        if (keeping == Durable) {
            auto opening = builder.store(SqliteStore::open(scratch_.file("cronoq.db"))).open(io_.get_executor());
            sched_ = asio::co_spawn(io_, optional_of(std::move(opening)), asio::use_future).get();
        } else {
            sched_.emplace(builder.build(io_.get_executor()));
        }
        try {
            dashboard_.emplace(Dashboard::start(*sched_, std::move(config)));
        } catch (...) {
            close();
            throw;
        }
    }
    ~Served() { close(); }
    void close() {
        dashboard_.reset();
        if (sched_) {
            auto down = sched_->shutdown(std::chrono::seconds(1));
            asio::co_spawn(io_, std::move(down), asio::use_future).get();
            sched_.reset();
        }
        guard_.reset();
        if (thread_.joinable()) thread_.join();
    }
    Served(const Served&) = delete;
    Served& operator=(const Served&) = delete;

    Sched& sched() { return *sched_; }
    Dashboard& dashboard() { return *dashboard_; }
    std::uint16_t port() const { return dashboard_->port(); }

    /// Submits and waits for the end, committed; the task's id.
    TaskId run(Task<std::string> task) { return wait(sched_->try_submit(std::move(task)).value()); }
    /// Waits for the task's end, committed; its id.
    TaskId wait(TaskHandle<std::string> handle) {
        auto result = handle.result();
        try {
            asio::co_spawn(io_, std::move(result), asio::use_future).get();
        } catch (const TaskFailure&) {
        }
        return handle.id();
    }
    /// Waits until everything so far is committed.
    void flush() {
        auto flushed = sched_->flush();
        asio::co_spawn(io_, std::move(flushed), asio::use_future).get();
    }

    HttpResponse get(const std::string& target, std::vector<std::string> headers = {}) {
        return http(port(), "GET", target, std::move(headers));
    }
    HttpResponse post(const std::string& target, std::vector<std::string> headers = {}, const std::string& body = "") {
        return http(port(), "POST", target, std::move(headers), body);
    }
    static nlohmann::json json(const HttpResponse& r) { return nlohmann::json::parse(r.body); }

private:
    // co_spawn's future needs a default-constructible value.
    static asio::awaitable<std::optional<Sched>> optional_of(asio::awaitable<Sched> opening) {
        co_return co_await std::move(opening);
    }

    ScratchDir scratch_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
    std::thread thread_;
    std::optional<Sched> sched_;
    std::optional<Dashboard> dashboard_;
};

}  // namespace cronoq::test
