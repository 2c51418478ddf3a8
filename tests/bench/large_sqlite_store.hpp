#pragma once
// A large SQLite store for the query benchmarks (query_bench.cpp,
// dashboard_bench.cpp), written past the store in one transaction.
//
// Row mix: 8 pools (pool-0 ... pool-7), 5 kinds, a key on every tenth task
// (key-<id>); 97 % succeeded, 1 % dead_lettered, 1 % failed, 0.5 % ready,
// 0.5 % running. 2 000 000 rows take about 0.5 GB and 10 s.
#include <cronoq/store/sqlite_store.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>

namespace cronoq_bench {

/// A store of `rows` tasks at `file`: the schema from SqliteStore::open,
/// then every row inserted by one INSERT ... SELECT over a recursive CTE,
/// synchronous off. Task i was submitted and updated at `first_ns` + i ms
/// (nanoseconds since the epoch); a scheduler opened on the store prunes
/// ended rows older than its retention, so pass a recent time for that.
std::shared_ptr<cronoq::SqliteStore> build_large_store(const std::filesystem::path& file, std::int64_t rows,
                                                       std::int64_t first_ns = 1700000000000000000);

}  // namespace cronoq_bench
