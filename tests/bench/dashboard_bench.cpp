// The dashboard's task list on a large store (docs/guide/dashboard.md,
// docs/PERFORMANCE.md "Dashboard"). Built only when cronoq::dashboard and
// cronoq::sqlite are (tests/bench/CMakeLists.txt).
//
//   BM_DashboardTasksPage/<case>  one GET /api/tasks?...&limit=50 over
//        loopback HTTP (a new connection each, as a browser's first
//        request), answered from a SQLite store of CRONOQ_BENCH_DASHBOARD_ROWS
//        rows (default 1 000 000) by a scheduler leading on it: the request
//        written, the store read, the JSON built and the whole reply read.
//        Counter: tasks (per page, 50).
//
// Cases: dead_lettered (the dashboard's dead-letter view), pool (one pool,
// every status), key_prefix (a search by key), first (no filter).
//
// The store is built once per process (large_sqlite_store.hpp), submitted
// over the last rows x 1 ms, its ready and running rows marked succeeded so that the scheduler recovers no
// work to run, and opened by a scheduler with the store's pools.
#include "large_sqlite_store.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/dashboard.hpp>

#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/use_future.hpp>
#include <asio/write.hpp>
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;
using Sched = cronoq::Scheduler<std::string, std::string>;

// co_spawn's future needs a default-constructible value.
asio::awaitable<std::optional<Sched>> optional_of(asio::awaitable<Sched> opening) { co_return co_await std::move(opening); }

/// A scheduler leading on the large store, with its dashboard on a free port.
struct Served {
    fs::path dir;
    std::int64_t rows = 1'000'000;
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
    std::thread thread;
    std::optional<Sched> sched;
    std::optional<cronoq::Dashboard> dashboard;

    Served() {
        if (const char* r = std::getenv("CRONOQ_BENCH_DASHBOARD_ROWS")) rows = std::max(std::atoll(r), 20'000LL);
        std::string pattern = (fs::temp_directory_path() / "cronoq-dashboard-bench-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("dashboard_bench: mkdtemp failed");
        dir = pattern;
        const fs::path file = dir / "large.db";
        // Recent rows: the scheduler would prune ended rows past its retention.
        const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch()).count();
        cronoq_bench::build_large_store(file, rows, now_ns - rows * 1'000'000);
        sqlite3* db = nullptr;
        sqlite3_open(file.c_str(), &db);
        sqlite3_exec(db, "UPDATE tasks SET status = 'succeeded' WHERE status IN ('ready', 'running')", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        thread = std::thread([this] { io.run(); });
        auto builder = Sched::builder();
        for (int i = 0; i < 8; ++i)
            builder.pool(cronoq::Pool<std::string, std::string>("pool-" + std::to_string(i))
                             .executor_fn([](cronoq::TaskContext, std::shared_ptr<const std::string> p) -> cronoq::Result<std::string> { return *p; }));
        auto opening = builder.store(cronoq::SqliteStore::open(file)).open(io.get_executor());
        sched = asio::co_spawn(io, optional_of(std::move(opening)), asio::use_future).get();
        dashboard.emplace(cronoq::Dashboard::start(*sched, cronoq::DashboardConfig{"127.0.0.1:0", "", false}));
        std::fprintf(stderr, "dashboard_bench: a store of %lld rows, served on port %u\n", static_cast<long long>(rows),
                     dashboard->port());
    }
    ~Served() {
        dashboard.reset();
        auto down = sched->shutdown(std::chrono::seconds(1));
        asio::co_spawn(io, std::move(down), asio::use_future).get();
        sched.reset();
        guard.reset();
        thread.join();
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
};

Served& served() {
    static Served s;
    return s;
}

/// The body of `GET target`, read to the end of the connection.
std::string get(std::uint16_t port, const std::string& target) {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    const std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\nConnection: close\r\n\r\n";
    asio::write(socket, asio::buffer(request));
    std::string reply;
    std::error_code ec;
    asio::read(socket, asio::dynamic_buffer(reply), ec);
    const auto body = reply.find("\r\n\r\n");
    if (reply.compare(0, 12, "HTTP/1.1 200") != 0 || body == std::string::npos)
        throw std::runtime_error("dashboard_bench: " + reply.substr(0, 200));
    return reply.substr(body + 4);
}

void BM_DashboardTasksPage(benchmark::State& state, const char* query) {
    Served& s = served();
    const std::string target = std::string("/api/tasks?limit=50") + query;
    std::size_t tasks = 0;
    for (auto _ : state) {
        const std::string body = get(s.dashboard->port(), target);
        state.PauseTiming();
        tasks = nlohmann::json::parse(body)["tasks"].size();
        state.ResumeTiming();
        if (tasks != 50) {
            state.SkipWithError("a page came back short");
            return;
        }
    }
    state.counters["tasks"] = static_cast<double>(tasks);
    state.counters["rows"] = static_cast<double>(s.rows);
}

}  // namespace

BENCHMARK_CAPTURE(BM_DashboardTasksPage, dead_lettered, "&status=dead_lettered")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DashboardTasksPage, pool, "&pool=pool-3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DashboardTasksPage, key_prefix, "&key_prefix=key-99")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DashboardTasksPage, first, "")->Unit(benchmark::kMillisecond);
