// Store clients (docs/guide/replicas.md) through the public API, each beside
// the in-process figure of the same shape, run in the same invocation.
// Built only when cronoq::sqlite is; the PostgreSQL variants only when
// cronoq::postgres is too (tests/bench/CMakeLists.txt).
//
//   BM_ClientSubmit/Sqlite      a BlockingClient on a fresh SQLite file, no
//                               leader; timed: 20 calls of submit_many(1 000
//                               tasks), each returning once its one
//                               transaction is committed. Items: tasks.
//   BM_ClientSubmit/InProcess   the same shape on a leading scheduler of the
//                               same file type: 20 times try_submit_many(1 000)
//                               then flush() (the acknowledgement); its pool
//                               runs the tasks meanwhile (a trivial executor).
//   BM_ClientSubmit/Postgres    as /Sqlite on a fresh schema of a throw-away
//                               local server (postgres_server.hpp), or
//                               skipped with the reason.
//   BM_ClientLatency/Sqlite     an idle leader in this process (its own
//                               SqliteStore object) and a BlockingClient on
//                               another object of the same file, as another
//                               process would have: per task, from the return
//                               of the client's submit() (its commit) to the
//                               start of the leader's attempt, one task at a
//                               time (each awaited before the next).
//                               Counters p50_ms, p99_ms.
//   BM_ClientLatency/InProcess  the same leader: from the call of its own
//                               submit() to the attempt's start.
//   BM_ClientLatency/Postgres   as /Sqlite on PostgreSQL.
//
// The temporary files go to std::filesystem::temp_directory_path() (TMPDIR).
#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/client.hpp>
#include <cronoq/store/sqlite_store.hpp>
#ifdef CRONOQ_BENCH_POSTGRES
#include <cronoq/store/postgres_store.hpp>

#include "postgres_server.hpp"
#endif

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Sched = cronoq::BlockingScheduler<std::string, std::string>;
using Client = cronoq::BlockingClient<std::string, std::string>;

constexpr int batch_size = 1000;
constexpr int batches = 20;
constexpr int latency_samples = 200;

class ClientBenchDir {
public:
    explicit ClientBenchDir(const char* tag)
        : path_(std::filesystem::temp_directory_path() /
                (std::string("cronoq_bench_client_") + tag + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ClientBenchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    std::filesystem::path file(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

// Fresh stores: each call gives a store no other call gave.
using StoreMaker = std::function<std::shared_ptr<cronoq::Store>()>;

std::vector<cronoq::Task<std::string>> one_batch(int round) {
    std::vector<cronoq::Task<std::string>> tasks;
    tasks.reserve(batch_size);
    for (int i = 0; i < batch_size; ++i) tasks.push_back(cronoq::Task<std::string>(std::to_string(round * batch_size + i)).pool("p"));
    return tasks;
}

cronoq::Pool<std::string, std::string> trivial_pool() {
    return cronoq::Pool<std::string, std::string>("p").workers(4, 4, 4).executor_fn(
        [](cronoq::TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<cronoq::Result<std::string>> {
            co_return *s;
        });
}

void client_submit(benchmark::State& state, const StoreMaker& make) {
    std::int64_t tasks = 0;
    for (auto _ : state) {
        std::optional<Client> client;
        try {
            client.emplace(Client::open(make()));
        } catch (const std::exception& e) {
            state.SkipWithError((std::string("opening: ") + e.what()).c_str());
            return;
        }
        const auto start = Clock::now();
        for (int b = 0; b < batches; ++b) {
            auto results = client->submit_many(one_batch(b));
            for (auto& r : results)
                if (!r) {
                    state.SkipWithError(("submit_many: " + r.message()).c_str());
                    return;
                }
        }
        state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
        tasks += batches * batch_size;
    }
    state.SetItemsProcessed(tasks);
}

void in_process_submit(benchmark::State& state, const StoreMaker& make) {
    std::int64_t tasks = 0;
    for (auto _ : state) {
        std::optional<Sched> sched;
        try {
            sched.emplace(Sched::builder().pool(trivial_pool()).store(make()).open());
        } catch (const std::exception& e) {
            state.SkipWithError((std::string("opening: ") + e.what()).c_str());
            return;
        }
        const auto start = Clock::now();
        for (int b = 0; b < batches; ++b) {
            auto results = sched->try_submit_many(one_batch(b));
            for (auto& r : results)
                if (!r) {
                    state.SkipWithError(("try_submit_many: " + r.message()).c_str());
                    return;
                }
            sched->flush();
        }
        state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
        sched->shutdown(0s);
        tasks += batches * batch_size;
    }
    state.SetItemsProcessed(tasks);
}

// When each attempt started, by payload.
struct Starts {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, Clock::time_point> at;

    Clock::time_point wait(const std::string& payload) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return at.count(payload) > 0; });
        return at[payload];
    }
};

cronoq::Pool<std::string, std::string> noting_pool(std::shared_ptr<Starts> starts) {
    return cronoq::Pool<std::string, std::string>("p").workers(1, 1, 1).executor_fn(
        [starts](cronoq::TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<cronoq::Result<std::string>> {
            {
                std::lock_guard lock(starts->mu);
                starts->at[*s] = Clock::now();
            }
            starts->cv.notify_all();
            co_return *s;
        });
}

double percentile_ms(std::vector<double> ms, double q) {
    if (ms.empty()) return 0;
    std::sort(ms.begin(), ms.end());
    return ms[std::min(ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(ms.size())))];
}

// `make_client_store` gives another Store object on the same store as the
// leader's, or null for the in-process figure.
void latency(benchmark::State& state, const std::function<std::shared_ptr<cronoq::Store>()>& make_leader_store,
             const std::function<std::shared_ptr<cronoq::Store>()>& make_client_store) {
    auto starts = std::make_shared<Starts>();
    std::optional<Sched> sched;
    std::optional<Client> client;
    try {
        sched.emplace(Sched::builder().pool(noting_pool(starts)).store(make_leader_store()).open());
        if (make_client_store) client.emplace(Client::open(make_client_store()));
    } catch (const std::exception& e) {
        state.SkipWithError((std::string("opening: ") + e.what()).c_str());
        return;
    }
    std::vector<double> ms;
    int n = 0;
    for (auto _ : state) {
        for (int i = 0; i < latency_samples; ++i, ++n) {
            const std::string payload = std::to_string(n);
            auto task = cronoq::Task<std::string>(payload).pool("p");
            Clock::time_point from;
            if (client) {
                auto h = client->submit(std::move(task));
                from = Clock::now();
                const auto started = starts->wait(payload);
                h.get();  // the leader is idle again before the next
                ms.push_back(std::chrono::duration<double, std::milli>(started - from).count());
            } else {
                from = Clock::now();
                auto h = sched->submit(std::move(task));
                const auto started = starts->wait(payload);
                h.get();
                ms.push_back(std::chrono::duration<double, std::milli>(started - from).count());
            }
        }
    }
    state.SetItemsProcessed(n);
    state.counters["p50_ms"] = percentile_ms(ms, 0.50);
    state.counters["p99_ms"] = percentile_ms(ms, 0.99);
    client.reset();
    sched->shutdown(0s);
}

std::shared_ptr<cronoq::Store> sqlite_at(const std::filesystem::path& file) { return cronoq::SqliteStore::open(file); }

// Where a benchmark runs: a client on SQLite or PostgreSQL, or the
// in-process figure of the same shape (on SQLite).
enum class Where { Sqlite, InProcess, Postgres };

#ifdef CRONOQ_BENCH_POSTGRES
// One server for every PostgreSQL variant; null with the reason when it
// cannot start.
cronoq::bench::PostgresServer* server(std::string& why) {
    static std::optional<cronoq::bench::PostgresServer> started;
    static std::string failed;
    if (!started && failed.empty()) {
        try {
            started.emplace();
        } catch (const std::exception& e) {
            failed = e.what();
        }
    }
    why = failed;
    return started ? &*started : nullptr;
}

std::shared_ptr<cronoq::Store> postgres_schema(cronoq::bench::PostgresServer& s, const std::string& schema) {
    cronoq::PostgresStoreConfig config;
    config.schema = schema;
    return cronoq::PostgresStore::connect(s.conninfo(), config);
}
#endif

// A maker of fresh stores for `where`, or null (skipped with the reason).
std::optional<std::function<std::shared_ptr<cronoq::Store>(const std::string&)>> stores(benchmark::State& state, Where where,
                                                                                       const ClientBenchDir& dir) {
    if (where != Where::Postgres)
        return [&dir](const std::string& name) { return sqlite_at(dir.file(name + ".db")); };
#ifdef CRONOQ_BENCH_POSTGRES
    std::string why;
    if (auto* s = server(why)) return [s](const std::string& name) { return postgres_schema(*s, "client_" + name); };
    state.SkipWithError(("PostgreSQL server: " + why).c_str());
#else
    state.SkipWithError("built without the PostgreSQL store");
#endif
    return std::nullopt;
}

void BM_ClientSubmit(benchmark::State& state, Where where) {
    ClientBenchDir dir("submit");
    const auto make = stores(state, where, dir);
    if (!make) return;
    static int round = 0;
    const StoreMaker fresh = [&] { return (*make)("submit_" + std::to_string(round++)); };
    if (where == Where::InProcess)
        in_process_submit(state, fresh);
    else
        client_submit(state, fresh);
}

void BM_ClientLatency(benchmark::State& state, Where where) {
    ClientBenchDir dir("latency");
    const auto make = stores(state, where, dir);
    if (!make) return;
    static int round = 0;
    const std::string name = "latency_" + std::to_string(round++);
    const auto same = [&] { return (*make)(name); };
    if (where == Where::InProcess)
        latency(state, same, nullptr);
    else
        latency(state, same, same);
}

// Fixed iterations: --benchmark_min_time must not multiply a run of many
// commits; repetitions give the medians.
BENCHMARK_CAPTURE(BM_ClientSubmit, Sqlite, Where::Sqlite)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ClientSubmit, InProcess, Where::InProcess)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ClientLatency, Sqlite, Where::Sqlite)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ClientLatency, InProcess, Where::InProcess)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
#ifdef CRONOQ_BENCH_POSTGRES
BENCHMARK_CAPTURE(BM_ClientSubmit, Postgres, Where::Postgres)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ClientLatency, Postgres, Where::Postgres)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif

}  // namespace
