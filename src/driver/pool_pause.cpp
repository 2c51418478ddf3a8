// Pausing and resuming a pool (pool_pause.hpp).
#include "pool_pause.hpp"

#include "durable_link.hpp"

#include <string>

namespace cronoq::detail {

bool set_pool_paused(SchedulerCore::State& s, std::string_view name, bool paused, core::Time now) {
    const auto pool = s.engine.find_pool(name);
    if (!pool) return false;
    const bool changed = paused ? s.engine.pause(*pool, now) : s.engine.resume(*pool, now);
    if (changed && s.durable)
        s.durable->write(s.held(), store::PoolPaused{std::string(name), paused, s.clock->system_now()});
    return true;
}

}  // namespace cronoq::detail
