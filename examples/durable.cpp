// cronoq durable: a scheduler on a SQLite store survives a SIGKILL.
//
// The program runs itself twice. The child (`durable --child <dir> <fd>`)
// leads on <dir>/cronoq.db and submits tasks; submit() returns once the task
// is committed, and then the child writes "<id> <payload> <key>" to the pipe
// <fd>. Each task appends its payload to a side-effect file and works 10 ms.
// The parent SIGKILLs the child after 20 acknowledgements, while tasks still
// run, opens the store itself and checks that every acknowledged task
// succeeded and left its side effect at least once, and that a key still
// deduplicates after the restart. It exits 1 if a check fails.
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
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;
using example::check;
using Sched = cronoq::BlockingScheduler<std::string, std::string>;
namespace fs = std::filesystem;

namespace {

constexpr int tasks_to_submit = 40;     // by the child
constexpr std::size_t kill_after = 20;  // acknowledgements the parent reads before the SIGKILL
constexpr auto lease = 500ms;           // the default, 10 s, would make the takeover wait that long

std::shared_ptr<cronoq::SqliteStore> open_store(const fs::path& dir) {
    cronoq::SqliteStoreConfig config;
    config.leader_lease = lease;
    return cronoq::SqliteStore::open(dir / "cronoq.db", config);
}

// Appends `line` and syncs it: a side effect that outlives a SIGKILL.
void record(const fs::path& file, const std::string& line) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    const std::string out = line + "\n";
    const bool ok = fd >= 0 && ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    if (!ok) throw std::runtime_error("cannot write " + file.string());
}

std::multiset<std::string> lines_of(const fs::path& file) {
    std::multiset<std::string> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.insert(line);
    return lines;
}

// The same pool in both processes. A plain (non-coroutine) executor runs on
// the blocking thread pool: the fsync never stalls the event loop. An attempt
// running at a crash counts as a retryable failure ("lease lost") at recovery.
cronoq::Pool<std::string, std::string> jobs(const fs::path& side_effects) {
    return cronoq::Pool<std::string, std::string>("jobs")
        .workers(2, 2, 2)
        .retry(cronoq::RetryPolicy{3, 10ms, 2.0, 100ms, false})
        .executor_fn([side_effects](cronoq::TaskContext, std::shared_ptr<const std::string> job) -> cronoq::Result<std::string> {
            record(side_effects, *job);
            std::this_thread::sleep_for(10ms);  // the work itself
            return *job + " done";
        });
}

// --child <dir> <fd>: submits until the parent kills it.
int child_main(const fs::path& dir, int fd) {
    auto sched = Sched::builder().pool(jobs(dir / "side_effects.txt")).store(open_store(dir)).open();
    std::vector<cronoq::BlockingHandle<std::string>> handles;
    for (int i = 1; i <= tasks_to_submit; ++i) {
        const std::string payload = "job-" + std::to_string(i);
        const std::string key = i % 4 == 0 ? "key-" + std::to_string(i) : "-";  // some tasks carry a key
        auto task = cronoq::Task<std::string>(payload);
        if (key != "-") task.key(key);
        handles.push_back(sched.submit(std::move(task)));  // returns once the task is committed
        // One write per line: the kill loses whole lines, never half of one.
        const std::string line = std::to_string(handles.back().id().value) + " " + payload + " " + key + "\n";
        if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
    }
    for (auto& h : handles) h.get();  // the parent kills the child long before this ends
    return 0;
}

struct Acknowledged { std::string payload, key; };  // key "-": none

// Starts `/proc/self/exe --child <dir> <fd>`: re-executed, never fork(),
// which is unsafe in a process that already runs threads.
pid_t spawn_child(const fs::path& dir, int write_fd) {
    std::string args[] = {"/proc/self/exe", "--child", dir.string(), std::to_string(write_fd)};
    char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), nullptr};
    pid_t pid = -1;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) throw std::runtime_error("posix_spawn failed");
    return pid;
}

int parent_main() {
    ::alarm(60);  // a hang is a failure too: SIGALRM ends the program
    std::string pattern = (fs::temp_directory_path() / "cronoq-durable-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    const fs::path dir = pattern, side_effects = dir / "side_effects.txt";

    // The child inherits the write end (no O_CLOEXEC), not the read end.
    // With the parent's copy closed, reading ends when the child is gone.
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    const pid_t pid = spawn_child(dir, fds[1]);
    ::close(fds[1]);

    std::map<std::uint64_t, Acknowledged> acked;  // by task id
    FILE* pipe_in = ::fdopen(fds[0], "r");
    auto read_one = [&] {
        char buffer[256];
        std::uint64_t id = 0;
        Acknowledged a;
        if (!std::fgets(buffer, sizeof buffer, pipe_in)) return false;
        if (std::istringstream(buffer) >> id >> a.payload >> a.key) acked[id] = a;
        return true;
    };
    while (acked.size() < kill_after && read_one()) {}
    ::kill(pid, SIGKILL);
    while (read_one()) {}  // what it wrote before it died was acknowledged too
    std::fclose(pipe_in);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::printf("durable: the child (pid %d) led on the store and reported %zu tasks acknowledged by\n"
                "  submit(); the parent sent SIGKILL after reading %zu of them\n",
                static_cast<int>(pid), acked.size(), kill_after);
    if (acked.size() < kill_after || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
        check(false, "the child ran until the kill");
        return 1;
    }

    int finished_before = 0, succeeded = 0, deduplicated = 0, keyed = 0;
    const auto done_in_child = lines_of(side_effects);
    {
        // Inspection needs no lead: it reads in short transactions.
        auto store = open_store(dir);
        for (const auto& [id, a] : acked) {
            const auto row = store->get_task(cronoq::TaskRef(cronoq::TaskId{id}));
            check(row.has_value(), "every acknowledged task is in the store");
            if (row && row->status == cronoq::TaskStatus::Succeeded) ++finished_before;
        }

        // open() waits to lead: the dead child never releases its lease, so
        // it must run out first. Then the store's tasks are recovered.
        const auto t0 = std::chrono::steady_clock::now();
        auto sched = Sched::builder().pool(jobs(side_effects)).store(store).open();
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
        std::printf("  at the kill the store held %d of them as succeeded, %zu not yet ended\n"
                    "  the parent's open() waited %lld ms to lead (the dead child's lease: %lld ms), then recovered\n",
                    finished_before, acked.size() - static_cast<std::size_t>(finished_before),
                    static_cast<long long>(waited.count()), static_cast<long long>(lease.count()));

        // find() gives a handle to every live task, recovered ones too, and
        // to an ended one that has a key: take the handles at once, while
        // the recovered tasks are still queued, then wait on each.
        std::vector<cronoq::BlockingHandle<std::string>> handles;
        for (const auto& [id, a] : acked)
            if (auto handle = sched.find(cronoq::TaskRef(cronoq::TaskId{id}))) handles.push_back(*handle);
        for (auto& handle : handles) {
            try {
                handle.get_for(30s);  // a bound against a hang, not a pause
            } catch (const cronoq::TaskFailure& failure) {
                std::printf("  task %llu: %s\n", static_cast<unsigned long long>(handle.id().value), failure.what());
            }
        }
        // Once flush() has committed every end so far, the store shows each
        // task's end, also of one that ended without a key before find().
        sched.flush();
        for (const auto& [id, a] : acked) {
            const auto row = store->get_task(cronoq::TaskRef(cronoq::TaskId{id}));
            succeeded += row && row->status == cronoq::TaskStatus::Succeeded && row->output == a.payload + " done";
        }
        std::printf("  %zu tasks awaited through find() handles (%zu had ended before find())\n", handles.size(),
                    acked.size() - handles.size());

        // A recovered key still deduplicates: the same key, the same task.
        for (const auto& [id, a] : acked) {
            if (a.key == "-") continue;
            ++keyed;
            if (sched.submit(cronoq::Task<std::string>("resubmitted").key(a.key)).id().value == id) ++deduplicated;
        }
        sched.shutdown(1s);
    }

    // Side effects recorded after the reopen are the parent's runs.
    const auto done_at_end = lines_of(side_effects);
    int ran_again = 0, ran_first = 0, with_side_effect = 0;
    for (const auto& [id, a] : acked) {
        const auto in_child = done_in_child.count(a.payload), in_parent = done_at_end.count(a.payload) - in_child;
        ran_again += in_child > 0 && in_parent > 0;
        ran_first += in_child == 0 && in_parent > 0;
        with_side_effect += in_child + in_parent > 0;
    }
    std::printf("  after the reopen %d ran again (started in the child, which died before their end was\n"
                "  committed: at-least-once, the side effect recorded twice) and %d ran for the first time\n"
                "  %d of %zu acknowledged tasks succeeded; %d have their side effect recorded\n"
                "  %d keyed tasks resubmitted after the restart: %d got their original id back\n",
                ran_again, ran_first, succeeded, acked.size(), with_side_effect, keyed, deduplicated);
    check(succeeded == static_cast<int>(acked.size()), "every acknowledged task succeeded");
    check(with_side_effect == static_cast<int>(acked.size()), "every acknowledged task left its side effect");
    check(keyed > 0 && deduplicated == keyed, "a resubmitted key returns the same task id after the restart");
    fs::remove_all(dir);
    return example::failed_checks == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 4 && std::string(argv[1]) == "--child") return child_main(argv[2], std::stoi(argv[3]));
        const int rc = parent_main();
        if (rc == 0) std::puts("durable: all checks passed");
        else std::printf("durable: %d check(s) failed\n", example::failed_checks);
        return rc;
    } catch (const std::exception& e) {
        std::printf("durable: unexpected exception: %s\n", e.what());
        return 1;
    }
}
