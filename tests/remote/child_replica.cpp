// `test_remote --child replica key=value...`: one replica of an application
// on a SQLite or PostgreSQL store, serving workers from open() on
// (Builder::serve_workers), with the remote pool "work" (three attempts). Keys:
//   store=<file>   a SQLite store     lease_ms=<n>   its leader_lease (default 1000)
//   schema=<name>  instead, a PostgreSQL store: that schema on the server of
//                  CRONOQ_TEST_PG (built with PostgreSQL only)
//   stamp=1        also prints the times below
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
//   K <ns>              with stamp: when open() returned (monotonic_ns)
//   C <ns>              with stamp: when the first task ended Succeeded
//                       under this leader (its status event)
// then waits to be killed.
#include "remote_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/remote/worker_server.hpp>
#include <cronoq/store/sqlite_store.hpp>
#ifdef CRONOQ_TEST_HAVE_POSTGRES
#include <cronoq/store/postgres_store.hpp>
#endif

#include "replica_support.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>

#include <cstdlib>
#include <map>
#include <thread>

namespace cronoq::test {

namespace {

std::string arg(const std::map<std::string, std::string>& args, const std::string& key, std::string fallback) {
    const auto it = args.find(key);
    return it == args.end() ? std::move(fallback) : it->second;
}

std::shared_ptr<Store> open_store(const std::map<std::string, std::string>& args, std::chrono::milliseconds lease) {
    using namespace std::chrono_literals;
#ifdef CRONOQ_TEST_HAVE_POSTGRES
    if (args.count("schema")) {
        PostgresStoreConfig config;
        config.schema = args.at("schema");
        config.leader_lease = lease;
        const char* info = std::getenv("CRONOQ_TEST_PG");
        return PostgresStore::connect(info ? info : "", config);
    }
#endif
    return SqliteStore::open(args.at("store"), SqliteStoreConfig{Durability::Full, lease, 24h});
}

/// Prints "C <ns>" at the first Succeeded event of `events`.
asio::awaitable<void> stamp_first_success(EventStream events) {
    while (auto event = co_await events.next()) {
        if (event->status != TaskStatus::Succeeded) continue;
        say("C " + std::to_string(monotonic_ns()));
        co_return;
    }
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
    const bool stamp = args.count("stamp") != 0;
    const std::string pool = arg(args, "pool", "work");
    std::optional<Sched> sched;
    auto builder = Sched::builder();
    // Taken before open(), so that completions during its recovery count.
    std::optional<EventStream> events;
    if (stamp) events.emplace(builder.subscribe());
    try {
        sched.emplace(builder.threads(2)
                          .shard(arg(args, "shard", "default"))
                          .pool(Pool<std::string, std::string>(pool).remote().retry(RetryPolicy{3, 10ms, 1.0, 10ms, false}))
                          .store(open_store(args, lease))
                          .serve_workers(config)
                          .open());
    } catch (const std::exception& e) {
        say(std::string("E ") + e.what());
        return 1;
    }
    say("O");
    asio::io_context stamping;
    std::thread stamper;
    if (stamp) {
        say("K " + std::to_string(monotonic_ns()));
        asio::co_spawn(stamping, stamp_first_success(std::move(*events)), asio::detached);
        stamper = std::thread([&] { stamping.run(); });
    }
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
