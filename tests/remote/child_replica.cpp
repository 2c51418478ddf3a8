// `test_remote --child replica key=value...`: one replica of an application
// on a SQLite store, serving workers from open() on (Builder::serve_workers),
// with the remote pool "work" (three attempts). Keys:
//   store=<file>   the store          lease_ms=<n>   its leader_lease (default 1000)
//   submit=<n>     once leading, submits n tasks keyed t0..t<n-1> with
//                  payload=<p> (default "wait_ms:100")
//   await=<n>      once leading, waits for the tasks keyed t0..t<n-1> to end
//   advertise=<a>  WorkerServerConfig::advertise
//   shard=<s>      Builder::shard (default "default")
//   pool=<p>       the remote pool's name (default "work"), which submit uses
// It prints, one line each:
//   L <port>            the endpoint is bound (before it waits to lead)
//   O                   open() returned: it leads
//   A t<i> <id>         submit returned for t<i>: acknowledged
//   F t<i> <output>     t<i> ended Succeeded (as `find(...)->get()` saw it)
//   T t<i> <status>     t<i> ended otherwise
//   E <what>            open() threw
// then waits to be killed.
#include "remote_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/remote/worker_server.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <cstdio>
#include <map>
#include <unistd.h>

namespace cronoq::test {

namespace {

void say(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

std::string arg(const std::map<std::string, std::string>& args, const std::string& key, std::string fallback) {
    const auto it = args.find(key);
    return it == args.end() ? std::move(fallback) : it->second;
}

}  // namespace

int replica_main(const std::map<std::string, std::string>& args) {
    using namespace std::chrono_literals;
    using Sched = BlockingScheduler<std::string, std::string>;
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"secret"};
    config.advertise = arg(args, "advertise", "");
    config.on_listening = [](std::uint16_t port) { say("L " + std::to_string(port)); };
    const auto lease = std::chrono::milliseconds(std::stoi(arg(args, "lease_ms", "1000")));
    const std::string pool = arg(args, "pool", "work");
    std::optional<Sched> sched;
    try {
        sched.emplace(Sched::builder()
                          .threads(2)
                          .shard(arg(args, "shard", "default"))
                          .pool(Pool<std::string, std::string>(pool).remote().retry(RetryPolicy{3, 10ms, 1.0, 10ms, false}))
                          .store(SqliteStore::open(args.at("store"), SqliteStoreConfig{Durability::Full, lease, 24h}))
                          .serve_workers(config)
                          .open());
    } catch (const std::exception& e) {
        say(std::string("E ") + e.what());
        return 1;
    }
    say("O");
    const int submit = std::stoi(arg(args, "submit", "0"));
    const std::string payload = arg(args, "payload", "wait_ms:100");
    for (int i = 0; i < submit; ++i) {
        auto handle = sched->submit(Task<std::string>(payload).pool(pool).key("t" + std::to_string(i)));
        say("A t" + std::to_string(i) + " " + std::to_string(handle.id().value));
    }
    const int await = std::stoi(arg(args, "await", "0"));
    for (int i = 0; i < await; ++i) {
        const std::string key = "t" + std::to_string(i);
        auto handle = sched->find(TaskRef(key));
        if (!handle) {
            say("T " + key + " unknown");
            continue;
        }
        try {
            say("F " + key + " " + *handle->get());
        } catch (const TaskFailure& f) {
            say("T " + key + " " + std::string(to_string(f.status())) + " " + f.message());
        }
    }
    for (;;) pause();
}

}  // namespace cronoq::test
