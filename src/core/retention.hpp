#pragma once
// Terminal tasks kept for lookups until their retention ends
// (docs/guide/operations.md): by age (EngineConfig::retention) and by count
// (EngineConfig::retention_max), oldest first.
#include "outbox.hpp"
#include "ring.hpp"
#include "task_table.hpp"

namespace cronoq::core {

class Retention {
public:
    Retention(Duration age, std::size_t max) : age_(age), max_(max) {}
    /// A task that just ended (its slot's ready_since says when).
    void retain(std::uint32_t s) { retained_.push_back(s); }
    std::size_t size() const { return retained_.size(); }
    /// Forgets the tasks past their retention: their slots, ids and keys
    /// go, and the owner hears Forget.
    void forget_expired(Time now, TaskTable& tasks, Outbox& out);

private:
    Duration age_;
    std::size_t max_;
    detail::Ring<std::uint32_t> retained_;  // slots of terminal tasks, oldest end first
};

}  // namespace cronoq::core
