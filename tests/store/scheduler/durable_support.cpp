#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <algorithm>
#include <unistd.h>

namespace cronoq::test {

void say(const std::string& line) {
    std::string out = line + "\n";
    std::replace(out.begin(), out.end() - 1, '\n', ' ');
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

Pool<std::string, std::string> gated_pool(std::shared_future<void> gate, std::size_t workers) {
    return Pool<std::string, std::string>("p").workers(workers, workers, workers).executor_fn(
        [gate](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            auto wait = offload(ctx, [gate] { gate.wait(); });
            co_await std::move(wait);
            co_return *s + "!";
        });
}

}  // namespace cronoq::test
