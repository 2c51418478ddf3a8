// A scheduler with a store (docs/guide/durability.md) through the public API. Built only
// when cronoq::sqlite is; the PostgreSQL benchmark only when
// cronoq::postgres is too (tests/bench/CMakeLists.txt).
//
//   BM_DurableThroughput/Full     per iteration: a fresh SqliteStore on a
//   BM_DurableThroughput/Normal   temporary file, a Scheduler opened on it
//                                 (open() waits to lead), 64 slots, the
//                                 io_context run by one thread; timed:
//                                 100 000 trivial tasks submitted with one
//                                 try_submit_many, flush(), then every
//                                 result awaited (each waits for the commit
//                                 of its task's success). Opening, shutdown
//                                 and removing the files are not timed
//                                 (manual time).
//   BM_DurableThroughput/Postgres the same on a PostgresStore, in a fresh
//                                 schema of a throw-away local server the
//                                 benchmark starts (postgres_server.hpp:
//                                 fsync and synchronous_commit on, a Unix
//                                 socket), or skips with the reason.
//   BM_DurableRoundTrip           submit() (waits for the admission's
//                                 commit), the executor runs, the awaited
//                                 result() (waits for the success's
//                                 commit), one task at a time,
//                                 Durability::Full, real time.
//
// The in-process figures to compare with are BM_DriverThroughput/1 and
// BM_DriverRoundTrip (driver_bench.cpp), run in the same invocation.
//
// Counters, over the timed part only:
//   syncs_per_task    fsync and fdatasync calls made by the whole process
//                     (SQLite's WAL and checkpoint syncs), per task; this
//                     file defines both functions, which count and forward
//                     to the C library's (see below)
//   sync_share        time spent inside those calls, on any thread, over
//                     the timed real time: near 1 when the store's thread
//                     mostly waits for the disk
//   commits           store transactions per iteration, throughput only
//   commits_per_task  the same per task, round trip only
//   mean_batch_size   changes committed per transaction
//   changes_per_task  changes committed per task, throughput only: what a
//                     commit writes is the net effect of its batches
//                     (docs/store.md, "Net changes"), so a task admitted,
//                     started and ended within one commit counts once
//   commit_p50_ms, commit_p99_ms  the store's commit latency over its last
//                     1024 transactions, at the end of the timed part
//   server_syncs_per_task  PostgreSQL only: WAL syncs the server made
//                     (pg_stat_wal.wal_sync), per task; the process's own
//                     syncs_per_task is then about 0
// The last five are differences of the store's own figures
// (store::Journal::figures(), read-only and safe from any thread):
// Scheduler::snapshot() does not carry store figures yet.
//
// The temporary files go to std::filesystem::temp_directory_path() (TMPDIR):
// on a tmpfs a sync costs nothing and the figures say little about a disk.
//
// GCC 12: no lambda or braced temporary inside a co_await full-expression;
// every awaitable is named first.
#include <cronoq/cronoq.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/sqlite_store.hpp>
#ifdef CRONOQ_BENCH_POSTGRES
#include <cronoq/store/postgres_store.hpp>

#include "postgres_server.hpp"
#endif

#include "bench_support.hpp"

#include <benchmark/benchmark.h>

#include <asio/co_spawn.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_future.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

// ---- fsync / fdatasync, counted ------------------------------------------------
//
// Defined in the executable, these come before the C library's in the global
// lookup scope, so libsqlite3's calls through its PLT land here; each counts
// the call and the time it took, and forwards to the next definition
// (glibc's), found with dlsym(RTLD_NEXT).
// BM_DurableRoundTrip fails when a Full-durability run counts none, so a
// build where the interposition does not take (a static libsqlite3, say)
// cannot report a figure of zero.

namespace {

constinit std::atomic<std::uint64_t> sync_calls{0};
constinit std::atomic<std::int64_t> sync_nanoseconds{0};

using SyncFn = int (*)(int);

SyncFn next_definition(const char* name) {
    void* symbol = ::dlsym(RTLD_NEXT, name);
    if (symbol == nullptr) {
        std::fprintf(stderr, "cronoq_bench: dlsym(RTLD_NEXT, \"%s\") found nothing\n", name);
        std::abort();
    }
    return std::bit_cast<SyncFn>(symbol);
}

int counted_sync(SyncFn next, int fd) {
    sync_calls.fetch_add(1, std::memory_order_relaxed);
    const auto start = std::chrono::steady_clock::now();
    const int result = next(fd);
    const auto took = std::chrono::steady_clock::now() - start;
    sync_nanoseconds.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count(),
                               std::memory_order_relaxed);
    return result;
}

}  // namespace

extern "C" int fsync(int fd) {
    static const SyncFn next = next_definition("fsync");
    return counted_sync(next, fd);
}

extern "C" int fdatasync(int fd) {
    static const SyncFn next = next_definition("fdatasync");
    return counted_sync(next, fd);
}

namespace {

using namespace std::chrono_literals;
using Sched = cronoq::Scheduler<std::string, std::string>;

constexpr int throughput_tasks = 100000;
constexpr std::size_t throughput_slots = 64;
// Round trips per driving coroutine; the benchmark thread waits for each
// batch.
constexpr int round_trip_batch = 50;
// A batch not done by then is taken for a hang: the run ends with a message
// instead of blocking (CI runs these benchmarks).
constexpr std::chrono::seconds hang_limit = 300s;

asio::awaitable<cronoq::Result<std::string>> echo(cronoq::TaskContext, std::shared_ptr<const std::string> s) {
    co_return *s;
}

using cronoq_bench::expected_sum;

// The task's output read back as the number it was submitted as.
std::int64_t value_of(const std::string& out) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(out.data(), out.data() + out.size(), v);
    if (ec != std::errc{} || end != out.data() + out.size()) throw std::runtime_error("unexpected output '" + out + "'");
    return v;
}

template <class T>
void wait_or_abort(std::future<T>& f, const char* what) {
    cronoq_bench::wait_or_abort(f, what, hang_limit);
}

std::string check_sum(std::future<std::int64_t>& done, std::int64_t expected, const char* what) {
    return cronoq_bench::check_sum(done, expected, what, hang_limit);
}

using cronoq_bench::Runners;

// A directory of its own under the temporary directory, removed with
// everything in it at the end. The constructor throws
// std::filesystem::filesystem_error when it cannot be made.
class TempDir {
public:
    explicit TempDir(const char* tag)
        : path_(std::filesystem::temp_directory_path() /
                (std::string("cronoq_bench_") + tag + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    std::filesystem::path file(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

void remove_store_files(const std::filesystem::path& file) {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        std::filesystem::remove(std::filesystem::path(file.string() + suffix), ignored);
}

std::shared_ptr<cronoq::SqliteStore> open_store(const std::filesystem::path& file, cronoq::Durability durability) {
    cronoq::SqliteStoreConfig config;
    config.durability = durability;
    return cronoq::SqliteStore::open(file, config);
}

// In an optional: asio::use_future needs a default-constructible value.
asio::awaitable<std::optional<Sched>> open_scheduler(std::shared_ptr<cronoq::Store> store, std::size_t slots) {
    auto ex = co_await asio::this_coro::executor;
    auto builder = Sched::builder();
    builder.pool(cronoq::Pool<std::string, std::string>("bench").workers(slots, slots, slots).executor_fn(echo))
        .store(std::move(store));
    auto opening = builder.open(ex);
    std::optional<Sched> sched(co_await std::move(opening));
    co_return sched;
}

// Opens a scheduler on `store` from the benchmark thread; empty and an
// error message if that failed.
std::optional<Sched> open_on(asio::io_context& io, std::shared_ptr<cronoq::Store> store, std::size_t slots,
                             std::string& error) {
    auto opened = asio::co_spawn(io, open_scheduler(std::move(store), slots), asio::use_future);
    wait_or_abort(opened, "open");
    try {
        return opened.get();
    } catch (const std::exception& e) {
        error = std::string("open: ") + e.what();
        return std::nullopt;
    }
}

void shut_down(asio::io_context& io, Sched sched, const char* what) {
    auto stop = [sched]() mutable -> asio::awaitable<void> {
        auto op = sched.shutdown(0s);
        co_await std::move(op);
    };
    auto stopped = asio::co_spawn(io, stop, asio::use_future);
    wait_or_abort(stopped, what);
}

// The process's syncs so far, to take differences over a timed part.
struct SyncCounts {
    std::uint64_t calls = sync_calls.load(std::memory_order_relaxed);
    std::int64_t nanoseconds = sync_nanoseconds.load(std::memory_order_relaxed);
};

// The store's commits and changes, to take differences over a timed part.
struct StoreCounts {
    std::uint64_t commits = 0;
    std::uint64_t changes = 0;

    static StoreCounts of(cronoq::Store& store) {
        const cronoq::store::Figures f = store.journal().figures();
        return {f.commits, f.changes_committed};
    }
};

double ratio(std::uint64_t num, std::uint64_t den) {
    return den > 0 ? static_cast<double>(num) / static_cast<double>(den) : 0.0;
}

// ---- BM_DurableThroughput/<durability> ----------------------------------------

// Submits `n` tasks in one call, waits until they are committed, then awaits
// every result.
asio::awaitable<std::int64_t> submit_flush_await_all(Sched sched, int n) {
    std::vector<cronoq::Task<std::string>> tasks;
    tasks.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) tasks.emplace_back(std::to_string(i));
    auto submitted = sched.try_submit_many(std::move(tasks));
    if (submitted.size() != static_cast<std::size_t>(n)) throw std::runtime_error("try_submit_many: wrong result count");
    for (auto& r : submitted)
        if (!r) throw std::runtime_error("try_submit_many: " + r.message());
    auto flushing = sched.flush();
    co_await std::move(flushing);
    std::int64_t sum = 0;
    for (auto& r : submitted) {
        auto wait = r.value().result();
        std::shared_ptr<const std::string> out = co_await std::move(wait);
        sum += value_of(*out);
    }
    co_return sum;
}

// The benchmark's directory, or null after SkipWithError.
std::unique_ptr<const TempDir> make_dir(benchmark::State& state, const char* tag) {
    try {
        return std::make_unique<const TempDir>(tag);
    } catch (const std::exception& e) {
        state.SkipWithError((std::string("temporary directory: ") + e.what()).c_str());
        return nullptr;
    }
}

// One iteration's store, fresh (`round` counts from 0); `remove` deletes
// what it leaves behind, after the store is closed.
struct FreshStores {
    std::function<std::shared_ptr<cronoq::Store>(int round)> open;
    std::function<void(int round)> remove;
};

// The PostgreSQL server's WAL syncs so far (pg_stat_wal), or nothing.
using ServerSyncs = std::function<std::uint64_t()>;

void run_throughput(benchmark::State& state, const FreshStores& stores, const ServerSyncs& server_syncs) {
    std::uint64_t syncs = 0;
    std::uint64_t server_sync_count = 0;
    double sync_seconds = 0;
    double timed_seconds = 0;
    StoreCounts totals;
    cronoq::store::Figures last_figures;
    std::int64_t tasks_done = 0;
    int round = 0;
    for (auto _ : state) {
        const int this_round = round++;
        asio::io_context io(1);
        std::optional<Runners> runners;
        runners.emplace(io, 1);
        std::shared_ptr<cronoq::Store> store;
        std::optional<Sched> sched;
        std::string error;
        try {
            store = stores.open(this_round);
            sched = open_on(io, store, throughput_slots, error);
        } catch (const std::exception& e) {
            error = std::string("opening the store: ") + e.what();
        }
        if (!sched) {
            state.SkipWithError(error.c_str());
            break;
        }

        const StoreCounts before = StoreCounts::of(*store);
        const std::uint64_t server_before = server_syncs ? server_syncs() : 0;
        const SyncCounts syncs_before;
        const auto start = std::chrono::steady_clock::now();
        auto done = asio::co_spawn(io, submit_flush_await_all(*sched, throughput_tasks), asio::use_future);
        error = check_sum(done, expected_sum(throughput_tasks), "BM_DurableThroughput");
        const auto stop = std::chrono::steady_clock::now();
        const SyncCounts syncs_after;
        const StoreCounts after = StoreCounts::of(*store);
        last_figures = store->journal().figures();
        if (server_syncs) server_sync_count += server_syncs() - server_before;
        syncs += syncs_after.calls - syncs_before.calls;
        sync_seconds += 1e-9 * static_cast<double>(syncs_after.nanoseconds - syncs_before.nanoseconds);
        totals.commits += after.commits - before.commits;
        totals.changes += after.changes - before.changes;
        const double seconds = std::chrono::duration<double>(stop - start).count();
        timed_seconds += seconds;
        state.SetIterationTime(seconds);

        shut_down(io, std::move(*sched), "BM_DurableThroughput: shutdown");
        sched.reset();
        runners->stop();
        store.reset();  // releases leadership and joins the store's thread
        stores.remove(this_round);
        if (!error.empty()) {
            state.SkipWithError(error.c_str());
            break;
        }
        tasks_done += throughput_tasks;
    }
    const auto done_tasks = static_cast<std::uint64_t>(tasks_done);
    state.SetItemsProcessed(tasks_done);
    state.counters["syncs_per_task"] = ratio(syncs, done_tasks);
    state.counters["sync_share"] = timed_seconds > 0 ? sync_seconds / timed_seconds : 0.0;
    state.counters["commits"] = ratio(totals.commits, static_cast<std::uint64_t>(state.iterations()));
    state.counters["mean_batch_size"] = ratio(totals.changes, totals.commits);
    state.counters["changes_per_task"] = ratio(totals.changes, done_tasks);
    state.counters["commit_p50_ms"] = 1e-6 * static_cast<double>(last_figures.commit_latency_p50.count());
    state.counters["commit_p99_ms"] = 1e-6 * static_cast<double>(last_figures.commit_latency_p99.count());
    if (server_syncs) state.counters["server_syncs_per_task"] = ratio(server_sync_count, done_tasks);
}

void BM_DurableThroughput(benchmark::State& state, cronoq::Durability durability) {
    const auto dir = make_dir(state, "throughput");
    if (!dir) return;
    const auto file = [&dir](int round) { return dir->file(std::to_string(round) + ".db"); };
    FreshStores stores{[&](int round) -> std::shared_ptr<cronoq::Store> { return open_store(file(round), durability); },
                       [&](int round) { remove_store_files(file(round)); }};
    run_throughput(state, stores, nullptr);
}
// One iteration is 100 000 tasks and a few seconds; fixed, so that
// --benchmark_min_time does not multiply it.
BENCHMARK_CAPTURE(BM_DurableThroughput, Full, cronoq::Durability::Full)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DurableThroughput, Normal, cronoq::Durability::Normal)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

#ifdef CRONOQ_BENCH_POSTGRES
struct OnPostgres {};

void BM_DurableThroughput(benchmark::State& state, OnPostgres) {
    std::optional<cronoq::bench::PostgresServer> server;
    try {
        server.emplace();
        // What the figures are said to be with: the server's defaults.
        for (const char* setting : {"fsync", "synchronous_commit"})
            if (server->value(std::string("SHOW ") + setting) != "on")
                throw std::runtime_error(std::string(setting) + " is not on");
    } catch (const std::exception& e) {
        state.SkipWithError((std::string("PostgreSQL server: ") + e.what()).c_str());
        return;
    }
    FreshStores stores{[&](int round) -> std::shared_ptr<cronoq::Store> {
                           cronoq::PostgresStoreConfig config;
                           config.schema = "bench_" + std::to_string(round);
                           return cronoq::PostgresStore::connect(server->conninfo(), config);
                       },
                       // The server and its folder go at the end.
                       [](int) {}};
    run_throughput(state, stores,
                   [&] { return static_cast<std::uint64_t>(std::stoull(server->value("SELECT wal_sync FROM pg_stat_wal"))); });
}
BENCHMARK_CAPTURE(BM_DurableThroughput, Postgres, OnPostgres{})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
#endif

// ---- BM_DurableRoundTrip ------------------------------------------------------

// `n` round trips, one after the other: submit() returns once the task's
// admission is committed; result() once its success is.
asio::awaitable<std::int64_t> round_trips(Sched sched, int n) {
    std::int64_t sum = 0;
    for (int i = 0; i < n; ++i) {
        cronoq::Task<std::string> task(std::to_string(i));
        auto submitting = sched.submit(std::move(task));
        cronoq::TaskHandle<std::string> handle = co_await std::move(submitting);
        auto wait = handle.result();
        std::shared_ptr<const std::string> out = co_await std::move(wait);
        sum += value_of(*out);
    }
    co_return sum;
}

void BM_DurableRoundTrip(benchmark::State& state) {
    const auto dir = make_dir(state, "round_trip");
    if (!dir) return;
    asio::io_context io(1);
    Runners runners(io, 1);
    std::shared_ptr<cronoq::SqliteStore> store;
    std::optional<Sched> sched;
    std::string error;
    try {
        store = open_store(dir->file("s.db"), cronoq::Durability::Full);
        sched = open_on(io, store, 1, error);
    } catch (const std::exception& e) {
        error = std::string("opening the store: ") + e.what();
    }
    if (!sched) {
        state.SkipWithError(error.c_str());
        return;
    }
    auto run_batch = [&] {
        auto done = asio::co_spawn(io, round_trips(*sched, round_trip_batch), asio::use_future);
        return check_sum(done, expected_sum(round_trip_batch), "BM_DurableRoundTrip");
    };

    error = run_batch();  // warm-up: the statements prepared, the file's first pages written
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    const StoreCounts before = StoreCounts::of(*store);
    const SyncCounts syncs_before;
    const auto start = std::chrono::steady_clock::now();
    while (error.empty() && state.KeepRunningBatch(round_trip_batch)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    const double timed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const SyncCounts syncs_after;
    const std::uint64_t syncs = syncs_after.calls - syncs_before.calls;
    const double sync_seconds = 1e-9 * static_cast<double>(syncs_after.nanoseconds - syncs_before.nanoseconds);
    const StoreCounts after = StoreCounts::of(*store);
    const auto tasks = static_cast<std::uint64_t>(state.iterations());
    if (error.empty() && tasks > 0 && syncs == 0)
        state.SkipWithError("no fsync or fdatasync counted with Durability::Full: the interposition did not take");
    state.counters["syncs_per_task"] = ratio(syncs, tasks);
    state.counters["sync_share"] = timed_seconds > 0 ? sync_seconds / timed_seconds : 0.0;
    state.counters["commits_per_task"] = ratio(after.commits - before.commits, tasks);
    state.counters["mean_batch_size"] = ratio(after.changes - before.changes, after.commits - before.commits);
    state.SetItemsProcessed(state.iterations());

    shut_down(io, std::move(*sched), "BM_DurableRoundTrip: shutdown");
    sched.reset();
    runners.stop();
    store.reset();
}
// Fixed, so that --benchmark_min_time does not multiply it: a round trip
// waits for up to two commits, each a sync of a few milliseconds at most.
BENCHMARK(BM_DurableRoundTrip)->Iterations(300)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
