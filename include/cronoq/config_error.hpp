#pragma once
#include <stdexcept>
#include <string>

namespace cronoq {

/// Invalid configuration, thrown by `Builder::build()` and by the engine's
/// configuration calls. The message names the offending field, e.g.
/// `pool "io": workers: min (4) > max (2)`. Nothing is half-built.
class ConfigError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

}  // namespace cronoq
