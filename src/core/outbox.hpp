#pragma once
// The actions the engine owes its owner
// (docs/design.md#engine-source-layout), in the order they happened, until
// Engine::drain takes them.
#include <cronoq/core/engine.hpp>

#include "engine_types.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::core {

class Outbox {
public:
    /// Actions are made in place: one is a large variant, and a temporary
    /// moved into it would cost a second construction.
    template <class A>
    A& emit() {
        return *std::get_if<A>(&actions_.emplace_back(std::in_place_type<A>));
    }
    template <class A>
    void emit(A&& action) {
        actions_.emplace_back(std::forward<A>(action));
    }
    /// `t`'s current status.
    void emit_status(const TaskSlot& t, Time now, std::optional<Time> until = std::nullopt, std::string&& message = {}) {
        Status& s = emit<Status>();
        s.task = t.id;
        s.pool = t.pool;
        s.status = t.status;
        s.attempt = t.attempt;
        s.at = now;
        s.until = until;
        s.user = t.user;
        if (!message.empty()) s.message = std::move(message);  // most have none: no call
    }
    bool empty() const { return actions_.empty(); }
    std::size_t size() const { return actions_.size(); }
    /// Drops the Status actions about `task` emitted since `mark` (a size()
    /// taken before): a restored task that lands where the store already
    /// has it is not announced again (recovery.hpp).
    void drop_statuses_since(std::size_t mark, TaskId task) {
        actions_.erase(std::remove_if(actions_.begin() + static_cast<std::ptrdiff_t>(mark), actions_.end(),
                                      [task](const Action& a) {
                                          const Status* st = std::get_if<Status>(&a);
                                          return st && st->task == task;
                                      }),
                       actions_.end());
    }
    void drain(std::vector<Action>& out) {
        out.clear();
        out.swap(actions_);
    }

private:
    std::vector<Action> actions_;
};

}  // namespace cronoq::core
