// prometheus_sample <dir>: a scheduler on a SQLite store in <dir> runs tasks
// that succeed, retry and end dead-lettered, in two pools (one named with a
// quote, a backslash and a newline), and prints `prometheus_text` of its
// snapshot on stdout. The ctest `prometheus_promtool` pipes it into
// `promtool check metrics` (docs/guide/operations.md, "Prometheus"). Exits 1
// when the snapshot does not show the tasks it ran.
#include <cronoq/cronoq.hpp>
#include <cronoq/prometheus.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using Sched = cronoq::BlockingScheduler<std::string, std::string>;

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: prometheus_sample <empty folder>\n";
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    std::filesystem::remove(dir / "metrics.db");
    const std::string odd = "odd \"pool\" \\ with\nnewline";
    auto executor = [](cronoq::TaskContext, std::shared_ptr<const std::string> job) -> cronoq::Result<std::string> {
        if (*job == "fail") return cronoq::TaskError::retryable("fails every time");
        return *job + " done";
    };
    auto sched = Sched::builder()
                     .pool(cronoq::Pool<std::string, std::string>("main").workers(2, 2, 2).executor_fn(executor))
                     .pool(cronoq::Pool<std::string, std::string>(odd)
                               .workers(1, 1, 1)
                               .retry(cronoq::RetryPolicy{2, 1ms, 1.0, 1ms, false})
                               .executor_fn(executor))
                     .store(cronoq::SqliteStore::open(dir / "metrics.db"))
                     .open();
    std::vector<cronoq::BlockingHandle<std::string>> handles;
    for (int i = 0; i < 20; ++i) handles.push_back(sched.submit(cronoq::Task<std::string>("job").pool("main")));
    for (int i = 0; i < 3; ++i) handles.push_back(sched.submit(cronoq::Task<std::string>("fail").pool(odd)));
    int failures = 0;
    for (auto& h : handles) {
        try {
            h.get();
        } catch (const cronoq::TaskFailure&) {
            ++failures;
        }
    }
    sched.flush();
    const cronoq::Snapshot snapshot = sched.scheduler().snapshot();
    std::uint64_t finished = 0, runs = 0;
    for (const cronoq::PoolSnapshot& p : snapshot.pools) {
        finished += p.totals.succeeded + p.totals.dead_lettered;
        runs += p.run_histogram.count;
    }
    if (failures != 3 || finished != 23 || runs != 26 || !snapshot.store || snapshot.store->commits == 0) {
        std::cerr << "the snapshot does not show the tasks that ran: " << snapshot.to_json_string() << "\n";
        return 1;
    }
    std::cout << cronoq::prometheus_text(snapshot);
    return 0;
}
