#pragma once
// An entry of a queue of ready tasks: the task's slot and its generation
// then. A task that leaves the Ready state bumps its generation, so the
// entry is stale and dropped when it reaches a head (removed lazily).
#include <cstdint>

namespace cronoq::core::detail {

struct QueueRef {
    std::uint32_t slot;
    std::uint32_t gen;
};

}  // namespace cronoq::core::detail
