// Store::query on a large SQLite store (docs/store.md, "Queries"). Built only
// when cronoq::sqlite is (tests/bench/CMakeLists.txt).
//
//   BM_QueryPage/<case>  one page of 50 tasks from a store of
//                        CRONOQ_BENCH_QUERY_ROWS rows (default 2 000 000),
//                        timed (manual time), and in the same iteration the
//                        same page from a store of 10 000 rows with the same
//                        mix, the baseline. Counters: large_us and small_us
//                        (mean per page), ratio = large / small: near 1 when
//                        a page costs the same whatever the store's size.
//
// Cases: dead_lettered (a rare status spread over the whole store: the
// walk of its (status, id) index), pool (one pool, every status: twelve
// walks of (pool, status, id) merged), pool_failed (one pool, one status),
// deep (dead_lettered, from a cursor in the middle of the store), all (no
// filter: the primary key).
//
// The stores are built once per process, outside the timing, in a
// temporary folder (TMPDIR): a store opened once for its schema, then every
// row inserted by one INSERT ... SELECT over a recursive CTE, in one
// transaction with synchronous off; 2 000 000 rows take about 0.5 GB.
// Row mix: 8 pools, 5 kinds, a key on every tenth task; 97 % succeeded,
// 1 % dead_lettered, 1 % failed, 0.5 % ready, 0.5 % running.
#include "large_sqlite_store.hpp"

#include <cronoq/store/sqlite_store.hpp>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Stores {
    fs::path dir;
    std::int64_t large_rows = 2'000'000;
    std::shared_ptr<cronoq::SqliteStore> large, small;

    Stores() {
        if (const char* rows = std::getenv("CRONOQ_BENCH_QUERY_ROWS")) large_rows = std::max(std::atoll(rows), 20'000LL);
        std::string pattern = (fs::temp_directory_path() / "cronoq-query-bench-XXXXXX").string();
        if (!::mkdtemp(pattern.data())) throw std::runtime_error("query_bench: mkdtemp failed");
        dir = pattern;
        const auto start = Clock::now();
        large = cronoq_bench::build_large_store(dir / "large.db", large_rows);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        small = cronoq_bench::build_large_store(dir / "small.db", 10'000);
        std::fprintf(stderr, "query_bench: %lld rows built in %.1f s, %.0f MB\n", static_cast<long long>(large_rows),
                     seconds, static_cast<double>(fs::file_size(dir / "large.db")) / 1e6);
    }
    ~Stores() {
        large.reset();
        small.reset();
        std::error_code ignored;
        fs::remove_all(dir, ignored);
    }
};

Stores& stores() {
    static Stores s;
    return s;
}

cronoq::TaskQuery query_for(int which, std::int64_t rows) {
    cronoq::TaskQuery q;
    q.limit = 50;
    switch (which) {
        case 0: q.statuses = {cronoq::TaskStatus::DeadLettered}; break;
        case 1: q.pool = "pool-3"; break;
        case 2: q.pool = "pool-4"; q.statuses = {cronoq::TaskStatus::Failed}; break;
        case 3:
            q.statuses = {cronoq::TaskStatus::DeadLettered};
            q.cursor = std::to_string(rows / 2);
            break;
        default: break;
    }
    return q;
}

void BM_QueryPage(benchmark::State& state, int which) {
    Stores& s = stores();
    const cronoq::TaskQuery large_query = query_for(which, s.large_rows);
    const cronoq::TaskQuery small_query = query_for(which, 10'000);
    double large_total = 0, small_total = 0;
    for (auto _ : state) {
        auto start = Clock::now();
        const cronoq::TaskPage large = s.large->query(large_query);
        const double large_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        start = Clock::now();
        const cronoq::TaskPage small = s.small->query(small_query);
        const double small_seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (large.tasks.size() != 50 || small.tasks.size() != 50) {
            state.SkipWithError("a page came back short");
            return;
        }
        state.SetIterationTime(large_seconds);
        large_total += large_seconds;
        small_total += small_seconds;
    }
    const auto n = static_cast<double>(state.iterations());
    state.counters["large_us"] = large_total / n * 1e6;
    state.counters["small_us"] = small_total / n * 1e6;
    state.counters["ratio"] = small_total > 0 ? large_total / small_total : 0;
    state.counters["rows"] = static_cast<double>(s.large_rows);
}

}  // namespace

BENCHMARK_CAPTURE(BM_QueryPage, dead_lettered, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryPage, pool, 1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryPage, pool_failed, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryPage, deep, 3)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_QueryPage, all, 4)->UseManualTime()->Unit(benchmark::kMicrosecond);
