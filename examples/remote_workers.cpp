// cronoq remote_workers: a scheduler whose pool runs on worker processes.
//
// The program serves the remote pool "render" with a WorkerServer on a free
// loopback port, and runs itself twice more as workers (`remote_workers
// --worker <target> <name> <fd>`), "alpha" and "bravo", two slots each.
// Each worker writes "<name> <task> <attempt>" to the pipe <fd> when a task
// starts. 20 short jobs spread over both workers. Then one long job starts
// on one of them, which the program SIGKILLs mid-task: the server fails the
// lost lease as retryable and the job finishes on the other worker, as its
// second attempt. It exits 1 if a check fails.
#include <cronoq/codec.hpp>
#include <cronoq/cronoq.hpp>
#include <cronoq/remote/remote_worker.hpp>
#include <cronoq/remote/worker_server.hpp>

#include "example_support.hpp"

#include <asio/signal_set.hpp>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

using namespace std::chrono_literals;
using example::check;
using Sched = cronoq::BlockingScheduler<std::string, std::string>;

namespace {

constexpr int short_jobs = 20;
const std::string token = "example-token";  // the server accepts only workers that present it

// --worker <target> <name> <fd>: a RemoteWorker until SIGTERM (or SIGKILL).
// "short-N" works 20 ms, "long" 2 s; both answer "<payload> by <name>".
int worker_main(const std::string& target, const std::string& name, int fd) {
    cronoq::RemoteWorkerOptions options;
    options.target = target;
    options.pool = "render";
    options.slots = 2;
    options.token = token;
    options.name = name;
    options.labels = {{"name", name}};
    options.initial_backoff = 50ms;
    asio::io_context io;
    cronoq::RemoteWorker<std::string, std::string> worker(
        options, [&](cronoq::RemoteLease<std::string> lease) -> asio::awaitable<cronoq::Result<std::string>> {
            const std::string& job = *lease.payload();
            // One write per line: lines of both workers never interleave.
            const std::string line = name + " " + std::to_string(lease.task_id().value) + " " +
                                     std::to_string(lease.attempt()) + "\n";
            if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
            co_await example::sleep_for(job == "long" ? std::chrono::milliseconds(2s) : 20ms);
            co_return job + " by " + name;
        });
    asio::signal_set signals(io, SIGTERM);
    signals.async_wait([&](std::error_code ec, int) {
        if (!ec) worker.stop();  // drains: running leases finish first
    });
    asio::co_spawn(io, worker.run(), [&](std::exception_ptr e) {
        signals.cancel();
        if (e) std::rethrow_exception(e);
    });
    io.run();
    return 0;
}

struct Worker {
    std::string name;
    pid_t pid = -1;
};

// `/proc/self/exe --worker ...`: re-executed, never fork(), which is unsafe
// in a process that already runs threads.
Worker spawn_worker(const std::string& target, const std::string& name, int write_fd) {
    std::string args[] = {"/proc/self/exe", "--worker", target, name, std::to_string(write_fd)};
    char* argv[] = {args[0].data(), args[1].data(), args[2].data(), args[3].data(), args[4].data(), nullptr};
    Worker w{name, -1};
    if (::posix_spawn(&w.pid, argv[0], nullptr, nullptr, argv, environ) != 0) throw std::runtime_error("posix_spawn failed");
    return w;
}

struct Started { std::string worker; std::uint64_t task = 0; unsigned attempt = 0; };

int parent_main() {
    ::alarm(60);  // a hang is a failure too: SIGALRM ends the program
    auto sched = Sched::builder()
                     .threads(2)
                     .pool(cronoq::Pool<std::string, std::string>("render")
                               .remote()  // no local executor: attempts go to connected workers
                               .retry(cronoq::RetryPolicy{3, 10ms, 2.0, 100ms, false}))
                     .build();
    cronoq::WorkerServerConfig config;
    config.listen = "127.0.0.1:0";  // any free port
    config.tokens = {token};
    auto scheduler = sched.scheduler();
    std::optional<cronoq::WorkerServer> server(cronoq::WorkerServer::start(scheduler, config));
    const std::string target = "127.0.0.1:" + std::to_string(server->port());
    std::printf("remote_workers: serving pool \"render\" on %s\n", target.c_str());

    // The workers inherit the write end (no O_CLOEXEC), not the read end.
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    std::map<std::string, Worker> workers;
    for (const char* name : {"alpha", "bravo"}) workers[name] = spawn_worker(target, name, fds[1]);
    ::close(fds[1]);
    FILE* starts = ::fdopen(fds[0], "r");
    auto next_start = [&] {
        char buffer[128];
        Started s;
        if (!std::fgets(buffer, sizeof buffer, starts)) throw std::runtime_error("the workers' pipe closed");
        std::istringstream(buffer) >> s.worker >> s.task >> s.attempt;
        return s;
    };

    // A task labelled with a worker's name runs only there: once both have
    // run one, both are connected, and the jobs below can spread.
    for (const auto& [name, w] : workers) {
        auto probe = sched.submit(cronoq::Task<std::string>("hello").pool("render").label("name", name));
        std::printf("  worker %s (pid %d) connected: %s\n", name.c_str(), static_cast<int>(w.pid), probe.get()->c_str());
        next_start();
    }

    std::vector<cronoq::BlockingHandle<std::string>> jobs;
    for (int i = 0; i < short_jobs; ++i)
        jobs.push_back(sched.submit(cronoq::Task<std::string>("short-" + std::to_string(i)).pool("render")));
    std::map<std::string, int> ran_by;
    for (auto& job : jobs) {
        const std::string out = *job.get();
        ++ran_by[out.substr(out.rfind(' ') + 1)];
    }
    for (int i = 0; i < short_jobs; ++i) next_start();  // one start line per job
    std::printf("  %d short jobs ran: %d on alpha, %d on bravo\n", short_jobs, ran_by["alpha"], ran_by["bravo"]);
    check(ran_by["alpha"] + ran_by["bravo"] == short_jobs, "every short job succeeded on a worker");
    check(ran_by["alpha"] > 0 && ran_by["bravo"] > 0, "the short jobs spread over both workers");

    auto events = sched.subscribe();
    auto long_job = sched.submit(cronoq::Task<std::string>("long").pool("render"));
    const Started first = next_start();
    Worker& victim = workers[first.worker];
    ::kill(victim.pid, SIGKILL);
    int status = 0;
    ::waitpid(victim.pid, &status, 0);
    victim.pid = -1;
    std::printf("  the long job (task %llu) started on %s; SIGKILLed %s mid-task\n",
                static_cast<unsigned long long>(first.task), first.worker.c_str(), first.worker.c_str());
    check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the worker died of the SIGKILL");
    const std::string survivor = first.worker == "alpha" ? "bravo" : "alpha";
    const std::string out = *long_job.get();
    const Started second = next_start();
    std::printf("  its second attempt started on %s and answered \"%s\"\n", second.worker.c_str(), out.c_str());
    check(first.task == long_job.id().value && first.attempt == 1, "the long job's first attempt ran on the killed worker");
    check(second.task == first.task && second.worker == survivor && second.attempt == 2,
          "the long job was retried on the other worker, as attempt 2");
    check(out == "long by " + survivor, "the long job succeeded on the surviving worker");

    // The survivor drains and stops; then the server and the scheduler.
    ::kill(workers[survivor].pid, SIGTERM);
    ::waitpid(workers[survivor].pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the surviving worker stopped cleanly on SIGTERM");
    server.reset();
    sched.shutdown(1s);
    std::fclose(starts);
    int ends = 0;
    std::string path;
    while (auto e = events.try_next()) {
        if (e->id != long_job.id()) continue;
        path += (path.empty() ? "" : " -> ") + std::string(cronoq::to_string(e->status));
        ends += cronoq::is_terminal(e->status);
    }
    std::printf("  the long job's statuses: %s\n", path.c_str());
    check(ends == 1, "the long job ended exactly once");
    return example::failed_checks == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc == 5 && std::string(argv[1]) == "--worker") return worker_main(argv[2], argv[3], std::stoi(argv[4]));
        const int rc = parent_main();
        if (rc == 0) std::puts("remote_workers: all checks passed");
        else std::printf("remote_workers: %d check(s) failed\n", example::failed_checks);
        return rc;
    } catch (const std::exception& e) {
        std::printf("remote_workers: unexpected exception: %s\n", e.what());
        return 1;
    }
}
