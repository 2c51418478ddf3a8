#include "leader_process.hpp"

#include <cronoq/store/journal.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cronoq::test {

using namespace std::chrono;

ChildArgs parse_child_args(int argc, char** argv) {
    ChildArgs args;
    for (int i = 3; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq != std::string::npos) args[arg.substr(0, eq)] = arg.substr(eq + 1);
    }
    return args;
}

void report_line(const std::string& line) {
    const std::string out = line + "\n";
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

std::string one_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

namespace {

const char* reason_name(store::LostReason reason) {
    switch (reason) {
    case store::LostReason::Released: return "released";
    case store::LostReason::Fenced: return "fenced";
    case store::LostReason::Failed: return "failed";
    }
    return "?";
}

std::string arg_or(const ChildArgs& args, const std::string& name, const std::string& fallback) {
    const auto it = args.find(name);
    return it == args.end() ? fallback : it->second;
}

}  // namespace

int leader_child(const ChildArgs& args, const std::function<std::shared_ptr<Store>(milliseconds)>& open) {
    const auto lease = milliseconds(std::stoll(arg_or(args, "lease", "1000")));
    const std::string tag = arg_or(args, "tag", "A");
    const std::size_t payload_size = std::stoul(arg_or(args, "payload", "0"));
    const auto pace = milliseconds(std::stoll(arg_or(args, "pace", "0")));
    std::shared_ptr<Store> store;
    try {
        store = open(lease);
    } catch (const StoreError& error) {
        report_line("F " + std::string(to_string(error.kind())) + " " + one_line(error.what()));
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
        report_line("L " + std::to_string(recovered.epoch) + " " + std::to_string(next));
        std::lock_guard lock(mutex);
        first = next;
        changed.notify_all();
    };
    handlers.on_commit = [&](const store::CommitReport& r) {
        if (r.error) {
            report_line("E " + std::string(to_string(r.error->kind())) + " " + one_line(r.error->what()));
            return;
        }
        report_line("C " + std::to_string(r.committed));
        std::lock_guard lock(mutex);
        committed = r.committed;
        changed.notify_all();
    };
    handlers.on_lost = [&](const store::LeadershipLost& l) {
        report_line("X " + std::string(reason_name(l.reason)) + " " + one_line(l.message));
        std::lock_guard lock(mutex);
        lost = l.reason;
        changed.notify_all();
    };
    store->journal().lead(handlers);
    report_line("W");

    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return first.has_value() || lost.has_value(); });
    for (store::Sequence n = 1; !lost; ++n) {
        changed.wait(lock, [&] { return lost.has_value() || n <= committed + 256; });
        if (lost) break;
        lock.unlock();
        const std::uint64_t id = *first + n - 1;
        store::TaskRow row = task_row(id);
        row.payload = tag + "-" + std::to_string(id);
        if (row.payload.size() < payload_size) row.payload.resize(payload_size, '.');
        store::Batch batch{{store::TaskInserted{std::move(row)}}};
        if (id > *first) {
            batch.changes.push_back(store::TaskTransition{TaskId{id - 1}, TaskStatus::Running, 1, "",
                                                          system_clock::now(), std::nullopt, std::nullopt});
        }
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

LeaderProcess::LeaderProcess(const std::vector<std::string>& site_args, const std::string& tag, milliseconds lease,
                             const std::vector<std::string>& extra)
    : child([&] {
          std::vector<std::string> args{"leader"};
          args.insert(args.end(), site_args.begin(), site_args.end());
          args.push_back("lease=" + std::to_string(lease.count()));
          args.push_back("tag=" + tag);
          args.insert(args.end(), extra.begin(), extra.end());
          return args;
      }()) {}

std::optional<std::string> LeaderProcess::until(const std::string& prefix) {
    return child.read_until(prefix, [this](const std::string& line) { note(line); });
}

void LeaderProcess::drain() {
    while (auto line = child.read_line(seconds(5))) note(*line);
}

void LeaderProcess::note(const std::string& line) {
    std::istringstream in(line.substr(std::min<std::size_t>(2, line.size())));
    if (line.rfind("L ", 0) == 0) in >> epoch >> first;
    else if (line.rfind("C ", 0) == 0) in >> acked;
    else if (line.rfind("E ", 0) == 0) errors.push_back(line);
    else if (line.rfind("X ", 0) == 0) lost = line;
}

}  // namespace cronoq::test
