// The modes a child process runs in (`test_store_postgres --child <mode>
// key=value...`), reporting on stdout one line per event, as the SQLite
// children do:
//   W                      it connected and waits to lead
//   L <epoch> <first id>   it leads; batch n (from 1) inserts task <first id> + n - 1
//   C <sequence>           every batch up to <sequence> is committed
//   E <kind> <message>     a commit attempt failed (retried)
//   X <reason> <message>   leadership ended; the child exits
#include "pg_support.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>

namespace cronoq::test {

namespace {

using namespace std::chrono;

std::map<std::string, std::string> parse_args(int argc, char** argv) {
    std::map<std::string, std::string> args;
    for (int i = 3; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq != std::string::npos) args[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    return args;
}

void report(const std::string& line) {
    const std::string out = line + "\n";
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

std::string one_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

const char* reason_name(store::LostReason reason) {
    switch (reason) {
    case store::LostReason::Released: return "released";
    case store::LostReason::Fenced: return "fenced";
    case store::LostReason::Failed: return "failed";
    }
    return "?";
}

/// Leads on `schema` and commits batches until leadership ends. Batch n
/// inserts task first + n - 1 (payload "<tag>-<id>"), moves the task before
/// it to Running and raises the task-id mark past it; `pace` ms between
/// batches, at most 256 queued.
int leader_mode(std::map<std::string, std::string> args) {
    PostgresStoreConfig config;
    config.schema = args["schema"];
    config.leader_lease = milliseconds(std::stoll(args["lease"]));
    const std::string tag = args["tag"];
    const auto pace = milliseconds(args.count("pace") ? std::stoll(args["pace"]) : 0);
    std::shared_ptr<PostgresStore> store;
    try {
        store = PostgresStore::connect(pg_conninfo(), config);
    } catch (const StoreError& error) {
        report("F " + std::string(to_string(error.kind())) + " " + one_line(error.what()));
        return 2;
    }
    std::mutex mutex;
    std::condition_variable changed;
    std::optional<std::uint64_t> first;
    store::Sequence committed = 0;
    std::optional<store::LostReason> lost;

    store::LeadHandlers handlers;
    handlers.on_leading = [&](store::Recovered recovered) {
        std::uint64_t next = std::max<std::uint64_t>(recovered.marks.next_task_id, 1);
        for (const auto& row : recovered.tasks) next = std::max(next, row.id.value + 1);
        report("L " + std::to_string(recovered.epoch) + " " + std::to_string(next));
        std::lock_guard lock(mutex);
        first = next;
        changed.notify_all();
    };
    handlers.on_commit = [&](const store::CommitReport& r) {
        if (r.error) {
            report("E " + std::string(to_string(r.error->kind())) + " " + one_line(r.error->what()));
            return;
        }
        report("C " + std::to_string(r.committed));
        std::lock_guard lock(mutex);
        committed = r.committed;
        changed.notify_all();
    };
    handlers.on_lost = [&](const store::LeadershipLost& l) {
        report("X " + std::string(reason_name(l.reason)) + " " + one_line(l.message));
        std::lock_guard lock(mutex);
        lost = l.reason;
        changed.notify_all();
    };
    store->journal().lead(handlers);
    report("W");

    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return first.has_value() || lost.has_value(); });
    for (store::Sequence n = 1; !lost; ++n) {
        changed.wait(lock, [&] { return lost.has_value() || n <= committed + 256; });
        if (lost) break;
        lock.unlock();
        const std::uint64_t id = *first + n - 1;
        store::TaskRow row = task_row(id);
        row.payload = tag + "-" + std::to_string(id);
        store::Batch batch{{store::TaskInserted{std::move(row)}}};
        if (id > *first)
            batch.changes.push_back(store::TaskTransition{TaskId{id - 1}, TaskStatus::Running, 1, "",
                                                          system_clock::now(), std::nullopt, std::nullopt});
        batch.changes.push_back(store::HighWaterMarks{id + 1, 0});
        store->journal().enqueue(std::move(batch));
        if (pace.count() > 0) std::this_thread::sleep_for(pace);
        lock.lock();
    }
    const store::LostReason reason = *lost;
    lock.unlock();
    store.reset();
    return reason == store::LostReason::Fenced ? 3 : reason == store::LostReason::Failed ? 4 : 0;
}

}  // namespace

int pg_child_main(int argc, char** argv) {
    const std::string mode = argc > 2 ? argv[2] : "";
    if (mode == "pg_leader") return leader_mode(parse_args(argc, argv));
    std::fprintf(stderr, "unknown child mode %s\n", mode.c_str());
    return 2;
}

}  // namespace cronoq::test
