#pragma once
// The engine's wakeups (docs/design.md#engine-source-layout): one min-heap
// of timers of every kind. A timer is never removed when what it waits for
// goes away; it goes stale and is skipped when it comes up
// (Engine::State::timer_live).
#include "engine_types.hpp"

#include <algorithm>
#include <vector>

namespace cronoq::core {

class TimerHeap {
public:
    void push(Time at, std::uint32_t slot, std::uint32_t gen, TimerKind kind) {
        timers_.push_back(Timer{at, slot, gen, kind});
        std::push_heap(timers_.begin(), timers_.end());
    }
    bool empty() const { return timers_.empty(); }
    const Timer& top() const { return timers_.front(); }
    void pop() {
        std::pop_heap(timers_.begin(), timers_.end());
        timers_.pop_back();
    }

private:
    std::vector<Timer> timers_;
};

}  // namespace cronoq::core
