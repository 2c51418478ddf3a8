// `test_remote --child worker key=value...`: a RemoteWorker<std::string,
// std::string> in its own process. Keys: target, pool, token, slots, name,
// label (name:value), ca, cert, key, drain_ms, backoff_ms (initial; max is
// 8 times it, or max_backoff_ms), insecure_redirect_http (any value: set),
// stamp (any value: S lines end with the time, monotonic_ns()). SIGTERM
// calls stop().
// Payloads say what the handler does:
//   echo:X        completes with X (and prints the lease's fields)
//   fail:M        TaskError::retryable(M)      permanent:M  TaskError::permanent(M)
//   reject:R      TaskError::reject(R)         throw:M      throws std::runtime_error(M)
//   cancel        TaskError::cancelled()       block        waits for cancelled()
//   wait_ms:N     completes with "waited" after N ms
//   who           completes with "<name> attempt=<attempt>" (which worker ran it)
//   hold_on:W     on worker W waits for cancelled() (as block); elsewhere as who
//   reject_on:W   on worker W TaskError::reject("W"); elsewhere as who
//   fail_until:N  TaskError::retryable before attempt N; then as who
// It prints, one line each:
//   S <lease> [<ns>]    a handler started (with stamp: when)
//   I <lease> <fields>  the fields of an echo lease
//   C <lease>           a blocked handler saw cancelled() complete
//   W <lease>, D <lease>  with stamp: a wait_ms handler ended, not
//                       cancelled (W) or cancelled (D)
//   E <code> <what>     run() threw RemoteWorkerError
//   X                   run() returned
#include "remote_support.hpp"
#include "replica_support.hpp"

#include <cronoq/remote/remote_worker.hpp>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <csignal>
#include <cstdio>
#include <map>

namespace cronoq::test {

namespace {

std::string fields(const RemoteLease<std::string>& lease) {
    std::string out = "task=" + std::to_string(lease.task_id().value) + " attempt=" + std::to_string(lease.attempt()) +
                      " pool=" + lease.pool() + " kind=" + lease.kind() + " key=" + lease.key().value_or("-") +
                      " type=" + lease.content_type();
    for (const auto& [name, value] : lease.tags()) out += " tag:" + name + "=" + value;
    if (lease.timeout()) out += " timeout_ms=" + std::to_string(lease.timeout()->count() / 1'000'000);
    if (lease.deadline())
        out += " deadline_ns=" + std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                    lease.deadline()->time_since_epoch()).count());
    return out;
}

// This process's worker name, for the verbs that depend on it.
std::string worker_name;
bool stamp_starts = false;

asio::awaitable<Result<std::string>> handle(RemoteLease<std::string> lease) {
    const std::string& payload = *lease.payload();
    const auto colon = payload.find(':');
    std::string verb = payload.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : payload.substr(colon + 1);
    say("S " + std::to_string(lease.id().value) + (stamp_starts ? " " + std::to_string(monotonic_ns()) : ""));
    const std::string who = worker_name + " attempt=" + std::to_string(lease.attempt());
    if (verb == "who") co_return who;
    if (verb == "hold_on") {
        if (arg != worker_name) co_return who;
        verb = "block";
    }
    if (verb == "reject_on") {
        if (arg != worker_name) co_return who;
        co_return TaskError::reject(arg);
    }
    if (verb == "fail_until") {
        if (lease.attempt() < std::stoul(arg)) co_return TaskError::retryable("attempt " + std::to_string(lease.attempt()));
        co_return who;
    }
    if (verb == "echo") {
        say("I " + std::to_string(lease.id().value) + " " + fields(lease));
        co_return arg;
    }
    if (verb == "fail") co_return TaskError::retryable(arg);
    if (verb == "permanent") co_return TaskError::permanent(arg);
    if (verb == "reject") co_return TaskError::reject(arg);
    if (verb == "throw") throw std::runtime_error(arg);
    if (verb == "cancel") co_return TaskError::cancelled();
    if (verb == "block") {
        co_await lease.cancelled();
        say("C " + std::to_string(lease.id().value));
        co_return TaskError::cancelled();
    }
    if (verb == "wait_ms") {
        asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(std::stoi(arg)));
        co_await timer.async_wait(asio::use_awaitable);
        // Cancelled: its stream was lost meanwhile (or it was aborted), and
        // the outcome is dropped.
        if (stamp_starts) say((lease.is_cancelled() ? "D " : "W ") + std::to_string(lease.id().value));
        co_return std::string("waited");
    }
    co_return TaskError::permanent("unknown payload " + payload);
}

int worker_mode(const std::map<std::string, std::string>& args, const std::vector<std::string>& labels) {
    RemoteWorkerOptions options;
    options.target = args.at("target");
    options.pool = args.count("pool") ? args.at("pool") : "work";
    if (args.count("token")) options.token = args.at("token");
    if (args.count("slots")) options.slots = std::stoul(args.at("slots"));
    options.name = args.count("name") ? args.at("name") : "child";
    worker_name = options.name;
    for (const auto& l : labels) options.labels[l.substr(0, l.find(':'))] = l.substr(l.find(':') + 1);
    if (args.count("ca") || args.count("cert")) {
        TlsFiles tls;
        if (args.count("ca")) tls.ca = args.at("ca");
        if (args.count("cert")) tls.cert = args.at("cert");
        if (args.count("key")) tls.key = args.at("key");
        options.tls = tls;
    }
    options.insecure_redirect_http = args.count("insecure_redirect_http") != 0;
    if (args.count("drain_ms")) options.drain_timeout = std::chrono::milliseconds(std::stoi(args.at("drain_ms")));
    const int backoff_ms = args.count("backoff_ms") ? std::stoi(args.at("backoff_ms")) : 50;
    options.initial_backoff = std::chrono::milliseconds(backoff_ms);
    options.max_backoff =
        std::chrono::milliseconds(args.count("max_backoff_ms") ? std::stoi(args.at("max_backoff_ms")) : 8 * backoff_ms);
    stamp_starts = args.count("stamp") != 0;

    asio::io_context io;
    RemoteWorker<std::string, std::string> worker(options, handle);
    asio::signal_set signals(io, SIGTERM);
    signals.async_wait([&](std::error_code ec, int) {
        if (!ec) worker.stop();
    });
    int status = 0;
    asio::co_spawn(io, worker.run(), [&](std::exception_ptr error) {
        signals.cancel();
        try {
            if (error) std::rethrow_exception(error);
            say("X");
        } catch (const RemoteWorkerError& e) {
            say("E " + std::to_string(e.code()) + " " + e.what());
            status = 1;
        }
    });
    io.run();
    return status;
}

}  // namespace

int child_main(int argc, char** argv) {
    const std::string mode = argc > 2 ? argv[2] : "";
    std::map<std::string, std::string> args;
    std::vector<std::string> labels;
    for (int i = 3; i < argc; ++i) {
        const std::string a = argv[i];
        const auto eq = a.find('=');
        if (eq == std::string::npos) continue;
        if (a.substr(0, eq) == "label") labels.push_back(a.substr(eq + 1));
        else args[a.substr(0, eq)] = a.substr(eq + 1);
    }
    if (mode == "worker") return worker_mode(args, labels);
#ifdef CRONOQ_TEST_HAVE_SQLITE
    if (mode == "replica") return replica_main(args);
#endif
    std::fprintf(stderr, "unknown child mode %s\n", mode.c_str());
    return 2;
}

}  // namespace cronoq::test
