// Runs one task through an installed cronoq.
#include <cronoq/cronoq.hpp>

#include <asio/io_context.hpp>

int main() {
    asio::io_context io;
    auto sched = cronoq::Scheduler<int, int>::builder()
                     .pool(cronoq::Pool<int, int>("default").executor_fn(
                         [](cronoq::TaskContext, std::shared_ptr<const int> x) -> asio::awaitable<cronoq::Result<int>> {
                             co_return *x + 1;
                         }))
                     .build(io.get_executor());
    auto handle = sched.try_submit(cronoq::Task<int>(41)).value();
    io.run();
    return handle.status() == cronoq::TaskStatus::Succeeded ? 0 : 1;
}
