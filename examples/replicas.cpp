// cronoq replicas: three replica processes on one SQLite file, each a client
// that submits, one the leader that runs the work; kill the leader, and the
// work goes on (docs/guide/replicas.md).
//
// The program runs itself four times: the parent starts three replicas
// (`replicas --replica <dir> <name> <fd>`). Each replica opens a
// BlockingClient, which never waits to lead, and submits its own tasks
// ("a-1", "a-2", ...): submit() returns once the task is committed to the
// file, whether or not a leader runs. Each replica also stands by to lead
// (BlockingScheduler's open() on a thread of its own); one of them leads
// and runs every replica's tasks. Each writes what happens to a pipe the
// parent reads ("LEAD <name>", "ACK <name> <id> <payload>", "DONE <name>").
// The parent SIGKILLs the leader while tasks are being submitted and run;
// another replica leads once the dead one's lease runs out and runs what
// was left, the dead replica's acknowledged tasks included. The parent then
// checks through its own client that every acknowledged task succeeded,
// and exits 1 if a check fails.
#include <cronoq/client.hpp>
#include <cronoq/cronoq.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include "example_support.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;
using example::check;
using Sched = cronoq::BlockingScheduler<std::string, std::string>;
using Client = cronoq::BlockingClient<std::string, std::string>;
namespace fs = std::filesystem;

namespace {

constexpr int tasks_per_replica = 20;
constexpr std::size_t kill_after = 15;  // acknowledgements the parent reads before it kills the leader
constexpr auto lease = 500ms;           // the default, 10 s, would make the takeover wait that long

std::shared_ptr<cronoq::SqliteStore> open_store(const fs::path& dir) {
    cronoq::SqliteStoreConfig config;
    config.leader_lease = lease;
    return cronoq::SqliteStore::open(dir / "cronoq.db", config);
}

// The same pool in every replica: whichever leads runs every replica's tasks.
cronoq::Pool<std::string, std::string> jobs() {
    return cronoq::Pool<std::string, std::string>("jobs").workers(2, 2, 2).executor_fn(
        [](cronoq::TaskContext, std::shared_ptr<const std::string> job) -> cronoq::Result<std::string> {
            std::this_thread::sleep_for(20ms);  // the work itself
            return *job + " done";
        });
}

// One line per write: the replicas share the pipe, and a write this short
// is atomic, so lines never mix.
void tell(int fd, const std::string& line) {
    const std::string out = line + "\n";
    if (::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) std::_Exit(1);
}

// --replica <dir> <name> <fd> <stop fd>: submits its tasks as a client and
// stands by to lead; runs until the parent closes the stop pipe.
int replica_main(const fs::path& dir, const std::string& name, int fd, int stop_fd) {
    std::optional<Sched> leader;
    std::mutex mu;
    std::thread standby([&] {
        try {
            auto sched = Sched::builder().pool(jobs()).store(open_store(dir)).open();  // waits to lead
            tell(fd, "LEAD " + name);
            std::lock_guard lock(mu);
            leader.emplace(std::move(sched));
        } catch (const std::exception& e) {
            tell(fd, "STOPPED " + name + " " + e.what());  // the store was released at the end
        }
    });

    auto client = Client::open(open_store(dir));  // never waits to lead
    std::vector<cronoq::BlockingClientHandle<std::string>> handles;
    for (int i = 1; i <= tasks_per_replica; ++i) {
        const std::string payload = name + "-" + std::to_string(i);
        handles.push_back(client.submit(cronoq::Task<std::string>(payload).pool("jobs")));  // once committed
        tell(fd, "ACK " + name + " " + std::to_string(handles.back().id().value) + " " + payload);
        std::this_thread::sleep_for(10ms);
    }
    for (auto& h : handles) h.get();  // each end, as committed by whichever replica leads
    tell(fd, "DONE " + name);

    char byte;
    while (::read(stop_fd, &byte, 1) > 0) {}  // until the parent closes the stop pipe
    {
        std::lock_guard lock(mu);
        if (leader) leader->shutdown(1s);  // hands over: another replica would lead at once
    }
    // A replica that never led is still waiting in open(), which only a
    // lead ends: the process ends without it (nothing of it is left to commit).
    std::fflush(stdout);
    std::_Exit(0);
}

pid_t spawn_replica(const fs::path& dir, const std::string& name, int fd, int stop_fd) {
    std::string args[] = {"/proc/self/exe", "--replica", dir.string(), name, std::to_string(fd), std::to_string(stop_fd)};
    char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), args[4].data(), args[5].data(), nullptr};
    pid_t pid = -1;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) throw std::runtime_error("posix_spawn failed");
    return pid;
}

struct Acked {
    std::string replica, payload;
};

int parent_main() {
    ::alarm(90);  // a hang is a failure too: SIGALRM ends the program
    std::string pattern = (fs::temp_directory_path() / "cronoq-replicas-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    const fs::path dir = pattern;

    int lines[2], stop[2];
    if (::pipe(lines) != 0 || ::pipe(stop) != 0) throw std::runtime_error("pipe failed");
    ::fcntl(lines[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(stop[1], F_SETFD, FD_CLOEXEC);
    std::map<std::string, pid_t> replicas;
    for (const char* name : {"a", "b", "c"}) replicas[name] = spawn_replica(dir, name, lines[1], stop[0]);
    ::close(lines[1]);
    ::close(stop[0]);
    std::printf("replicas: three replica processes (a, b, c) on %s\n", (dir / "cronoq.db").c_str());

    FILE* in = ::fdopen(lines[0], "r");
    std::map<std::uint64_t, Acked> acked;
    std::vector<std::string> leaders, done;
    auto read_line = [&]() -> bool {
        char buffer[512];
        if (!std::fgets(buffer, sizeof buffer, in)) return false;
        std::istringstream line(buffer);
        std::string tag, name;
        line >> tag >> name;
        if (tag == "ACK") {
            std::uint64_t id = 0;
            Acked a{name, {}};
            line >> id >> a.payload;
            acked[id] = a;
        } else if (tag == "LEAD") {
            leaders.push_back(name);
            std::printf("  replica %s leads\n", name.c_str());
        } else if (tag == "DONE") {
            done.push_back(name);
            std::printf("  replica %s: each of its %d tasks ended, as its client saw in the store\n", name.c_str(),
                        tasks_per_replica);
        }
        return true;
    };
    while ((leaders.empty() || acked.size() < kill_after) && read_line()) {}
    check(!leaders.empty(), "one replica leads");
    const std::string first = leaders.front();
    ::kill(replicas[first], SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    std::printf("  SIGKILL to replica %s, the leader, after %zu acknowledged submissions\n", first.c_str(), acked.size());
    int status = 0;
    ::waitpid(replicas[first], &status, 0);
    replicas.erase(first);

    while (leaders.size() < 2 && read_line()) {}
    check(leaders.size() == 2, "another replica leads after the kill");
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at);
    std::printf("  ... %lld ms after the kill (the dead leader's lease: %lld ms)\n", static_cast<long long>(waited.count()),
                static_cast<long long>(lease.count()));
    while (done.size() < 2 && read_line()) {}  // the two that live
    check(done.size() == 2, "both living replicas saw their tasks end");

    // Every acknowledged task, the dead replica's too, as the store has it.
    int succeeded = 0, ran_again = 0;
    auto client = Client::open(open_store(dir));
    for (const auto& [id, a] : acked) {
        auto h = client.find(cronoq::TaskRef(cronoq::TaskId{id}));
        if (!h) continue;
        auto out = h->get_for(30s);  // a bound against a hang, not a pause
        const auto row = client.get(cronoq::TaskRef(cronoq::TaskId{id}));
        succeeded += out && **out == a.payload + " done";
        ran_again += row && row->attempt > 1;
    }
    std::printf("  %d of %zu acknowledged tasks succeeded (%d started again after the failover: at-least-once)\n",
                succeeded, acked.size(), ran_again);
    check(succeeded == static_cast<int>(acked.size()), "every acknowledged task succeeded");

    ::close(stop[1]);  // the living replicas stop
    while (read_line()) {}
    std::fclose(in);
    for (const auto& [name, pid] : replicas) ::waitpid(pid, &status, 0);
    fs::remove_all(dir);
    return example::failed_checks == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 6 && std::string(argv[1]) == "--replica")
            return replica_main(argv[2], argv[3], std::stoi(argv[4]), std::stoi(argv[5]));
        const int rc = parent_main();
        if (rc == 0) std::puts("replicas: all checks passed");
        else std::printf("replicas: %d check(s) failed\n", example::failed_checks);
        return rc;
    } catch (const std::exception& e) {
        std::printf("replicas: unexpected exception: %s\n", e.what());
        return 1;
    }
}
