// The "cronoq" spdlog logger: replaceable, silent below warnings by default,
// never on stdout.
#include <cronoq/logging.hpp>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace cronoq {

namespace {

std::mutex logger_mu;
std::shared_ptr<spdlog::logger> current;

std::shared_ptr<spdlog::logger> make_default() {
    if (auto registered = spdlog::get("cronoq")) return registered;
    auto l = std::make_shared<spdlog::logger>("cronoq", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_level(spdlog::level::warn);
    return l;
}

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
    std::lock_guard lock(logger_mu);
    if (!current) current = make_default();
    return current;
}

void set_logger(std::shared_ptr<spdlog::logger> l) {
    std::lock_guard lock(logger_mu);
    if (!l) {
        l = std::make_shared<spdlog::logger>("cronoq", std::make_shared<spdlog::sinks::null_sink_mt>());
        l->set_level(spdlog::level::off);  // not even formatted
    }
    current = std::move(l);
}

}  // namespace cronoq
