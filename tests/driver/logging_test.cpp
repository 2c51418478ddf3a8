// cronoq logs through the spdlog logger named "cronoq", which the
// application can replace or silence (docs/guide/operations.md).
#include "driver_harness.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <stdexcept>

namespace logging_test {

using namespace cronoq;

namespace {

// Restores the default logger whatever the test does.
struct LoggerGuard {
    std::shared_ptr<spdlog::logger> saved = logger();
    ~LoggerGuard() { set_logger(saved); }
};

void run_one_panicking_task() {
    asio::io_context io;
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [](TaskContext, std::shared_ptr<const int>) -> asio::awaitable<Result<int>> {
                             throw std::runtime_error("kaput");
                         }))
                     .build(io.get_executor());
    sched.try_submit(Task<int>(1)).value();
    io.run();
}

}  // namespace

TEST(Logging, DefaultLoggerIsNamedCronoqAndQuietBelowWarnings) {
    auto l = logger();
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->name(), "cronoq");
    EXPECT_FALSE(l->should_log(spdlog::level::info));
    EXPECT_TRUE(l->should_log(spdlog::level::warn));
}

TEST(Logging, ReplacedLoggerReceivesPanics) {
    LoggerGuard guard;
    std::ostringstream out;
    auto custom = std::make_shared<spdlog::logger>("cronoq", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    custom->set_level(spdlog::level::warn);
    set_logger(custom);
    run_one_panicking_task();
    EXPECT_NE(out.str().find("panic: kaput"), std::string::npos) << out.str();
}

TEST(Logging, NullLoggerSilencesCronoq) {
    LoggerGuard guard;
    set_logger(nullptr);
    EXPECT_FALSE(logger()->should_log(spdlog::level::critical));
    run_one_panicking_task();  // nothing to observe but that it does not crash
}
}  // namespace logging_test
