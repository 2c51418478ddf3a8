#include "client_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>

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
        auto h = client.submit(Task<std::string>(key).pool("p").key(key));
        say("A " + std::to_string(h.id().value) + " " + key);
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
