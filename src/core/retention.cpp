#include "retention.hpp"

namespace cronoq::core {

void Retention::forget_expired(Time now, TaskTable& tasks, Outbox& out) {
    constexpr std::size_t slot_lookahead = 4;
    while (!retained_.empty()) {
        const std::uint32_t s = retained_.front();
        TaskSlot& t = tasks[s];
        if (retained_.size() <= max_ && now - t.ready_since < age_) break;
        if (const std::string* key = tasks.key_of(t)) tasks.drop_key(*key);
        out.emit(Forget{t.id, t.user});
        tasks.forget(s);  // the next admission takes it, still in cache
        retained_.pop_front();
        // Tasks are forgotten in this order, one or a few per call, long
        // after they ended: in a large engine their slots and id entries
        // are out of cache. Start loading the slot of a task a few places
        // on, and the id entry of the next one (its slot, loaded calls
        // ago, names the id).
        if (retained_.size() > 1) tasks.prefetch_id(tasks[retained_[1]].id);
        if (retained_.size() > slot_lookahead) tasks.prefetch(retained_[slot_lookahead]);
    }
}

}  // namespace cronoq::core
