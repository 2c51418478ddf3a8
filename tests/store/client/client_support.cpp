#include "client_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

#include <cstdio>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace cronoq::test {

Pool<std::string, std::string> paced_pool(std::chrono::milliseconds pause, std::size_t workers) {
    return Pool<std::string, std::string>("p").workers(workers, workers, workers).executor_fn(
        [pause](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            asio::steady_timer timer(co_await asio::this_coro::executor, pause);
            co_await timer.async_wait(asio::use_awaitable);
            co_return *s + "!";
        });
}

namespace {

Pool<std::string, std::string> holding_pool() {
    return Pool<std::string, std::string>("p").workers(2, 2, 2).executor_fn(
        [](TaskContext ctx, std::shared_ptr<const std::string>) -> asio::awaitable<Result<std::string>> {
            say("S " + std::to_string(ctx.id().value));
            auto cancelled = ctx.cancelled();
            co_await std::move(cancelled);
            say("C " + std::to_string(ctx.id().value));
            co_return TaskError::permanent("cancelled");
        });
}

}  // namespace

int client_submit_child_main(int argc, char** argv) {
    if (argc != 7) return 2;
    auto client = TestClient::open(open_location(argv[3]));
    const std::string prefix = argv[4];
    const int count = std::stoi(argv[5]);
    const auto pace = std::chrono::milliseconds(std::stoi(argv[6]));
    for (int i = 0; i < count; ++i) {
        const std::string key = prefix + std::to_string(i);
        // A submission the store refused (Busy: the write lock stayed taken
        // longer than the store waits) is not acknowledged; submitted again
        // under its key, it cannot make a second task.
        std::optional<TestHandle> h;
        while (!h) {
            try {
                h = client.submit(Task<std::string>(key).pool("p").key(key));
            } catch (const StoreError& e) {
                std::fprintf(stderr, "client-submit %s: %s (submitting again)\n", key.c_str(), e.what());
            }
        }
        say("A " + std::to_string(h->id().value) + " " + key);
        if (pace.count() > 0) std::this_thread::sleep_for(pace);
    }
    say("D");
    return 0;
}

int client_leader_child_main(int argc, char** argv) {
    if (argc != 5) return 2;
    const std::string mode = argv[4];
    auto pool = mode == "hold" ? holding_pool() : paced_pool(std::chrono::milliseconds(2));
    auto sched = Durable::builder().threads(2).pool(std::move(pool)).store(open_location(argv[3])).open();
    say("L");
    for (;;) ::pause();
}

int shard_leader_child_main(int argc, char** argv) {
    if (argc != 6) return 2;
    const std::string shard = argv[4], pool = argv[5];
    auto tagged = Pool<std::string, std::string>(pool).workers(4, 4, 4).executor_fn(
        [shard](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(2));
            co_await timer.async_wait(asio::use_awaitable);
            co_return *s + "@" + shard;
        });
    auto sched = Durable::builder().threads(2).shard(shard).pool(std::move(tagged)).store(open_location(argv[3])).open();
    say("L");
    for (;;) ::pause();
}

bool read_client_acks(Child& child, std::map<std::uint64_t, std::string>& acks) {
    while (auto line = child.read_line()) {
        if (*line == "D") return true;
        std::istringstream in(*line);
        char tag = 0;
        std::uint64_t id = 0;
        std::string key;
        if (in >> tag >> id >> key && tag == 'A') acks[id] = key;
    }
    return false;
}

}  // namespace cronoq::test
