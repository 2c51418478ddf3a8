#pragma once
// cronoq logs through spdlog on a logger named "cronoq" (docs/guide/operations.md).
#include <memory>

namespace spdlog {
class logger;
}

namespace cronoq {

/// The logger cronoq writes to. By default a logger named "cronoq" from
/// spdlog's registry if the application registered one, else one of our own
/// that writes warnings and errors to stderr and is silent below. cronoq
/// never writes to stdout.
std::shared_ptr<spdlog::logger> logger();

/// Replaces the logger (null: silence cronoq entirely).
void set_logger(std::shared_ptr<spdlog::logger> logger);

}  // namespace cronoq
