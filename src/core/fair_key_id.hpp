#pragma once
#include <cstdint>

namespace cronoq::core::detail {

/// A fair key, interned per engine (fair_keys.hpp); 0 is the key "".
using FairKeyId = std::uint32_t;

}  // namespace cronoq::core::detail
