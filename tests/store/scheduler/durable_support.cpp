#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <algorithm>
#include <sstream>
#include <unistd.h>

namespace cronoq::test {

void say(const std::string& line) {
    std::string out = line + "\n";
    std::replace(out.begin(), out.end() - 1, '\n', ' ');
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

Pool<std::string, std::string> identity_pool(std::string name) {
    return Pool<std::string, std::string>(std::move(name))
        .executor_fn([](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            co_return *s;
        });
}

Pool<std::string, std::string> gated_pool(std::shared_future<void> gate, std::size_t workers) {
    return Pool<std::string, std::string>("p").workers(workers, workers, workers).executor_fn(
        [gate](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            auto wait = offload(ctx, [gate] { gate.wait(); });
            co_await std::move(wait);
            co_return *s + "!";
        });
}

void Acks::note(const std::string& line) {
    std::istringstream in(line);
    char tag = 0;
    std::uint64_t id = 0;
    std::string key;
    if (line.rfind("X ", 0) == 0) stop = line;
    if (in >> tag >> id >> key && tag == 'A') by_id[id] = key;
}

void Acks::read(Child& child, std::size_t at_least) {
    while (by_id.size() < at_least) {
        auto line = child.read_line();
        ASSERT_TRUE(line.has_value()) << "the leader stopped early";
        note(*line);
    }
}

Standby::Standby(const std::string& location, Pool<std::string, std::string> pool) {
    thread = std::thread([this, location, pool = std::move(pool)]() mutable {
        try {
            sched.emplace(Durable::builder().threads(2).pool(std::move(pool)).store(open_location(location)).open());
            opened.set_value();
        } catch (...) {
            opened.set_exception(std::current_exception());
        }
    });
}

Standby::~Standby() { thread.join(); }

}  // namespace cronoq::test
