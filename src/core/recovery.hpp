#pragma once
// Tasks brought back after a restart (docs/guide/durability.md): each
// comes back in the status the store holds, through the ordinary
// transitions, and every task is known (ids, keys) before any edge is
// evaluated, so that dependencies resolve in any order. Holds the
// components a restored task joins, given at construction; owns nothing
// between calls.
#include "admission.hpp"
#include "lifecycle.hpp"
#include "outbox.hpp"
#include "resource_gate.hpp"
#include "retention.hpp"
#include "task_table.hpp"
#include "waiting_room.hpp"

#include <span>
#include <string>
#include <vector>

namespace cronoq::core {

class Recovery {
public:
    struct Parts {
        std::vector<PoolState>& pools;
        Outbox& out;
        ResourceGate& resources;
        WaitingRoom& waiting;
        Retention& retention;
        Admission& admission;
        Lifecycle& life;
    };
    Recovery(TaskTable& tasks, const Parts& parts)
        : tasks_(tasks), pools_(parts.pools), out_(parts.out), resources_(parts.resources),
          waiting_(parts.waiting), retention_(parts.retention), admission_(parts.admission), life_(parts.life) {}

    /// Engine::restore once the caller has run due timers; one result per
    /// task, in order.
    std::vector<SubmitResult<TaskId>> restore(std::span<const RestoredTask> tasks, Time now);

private:
    std::optional<Rejection> check_restored(const RestoredTask& task, std::string& resource_problem) const;
    void place_restored(const RestoredTask& task, std::uint32_t slot, Time now);
    void restore_edges(const RestoredTask& task, std::uint32_t slot, Time now);
    /// A terminal task that comes back retained, as if it ended at `now`.
    void retain_restored(const RestoredTask& task, const std::string* key, Time now);

    TaskTable& tasks_;
    std::vector<PoolState>& pools_;
    Outbox& out_;
    ResourceGate& resources_;
    WaitingRoom& waiting_;
    Retention& retention_;
    Admission& admission_;
    Lifecycle& life_;
};

}  // namespace cronoq::core
