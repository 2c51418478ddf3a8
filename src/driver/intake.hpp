#pragma once
// What the leader keeps of its ingestion of clients' submissions and
// cancels (docs/store.md, "Clients"; the passes themselves are
// ingestion.hpp's): whether a pass is wanted or under way, the inbox
// entries taken whose InboxTaken is not committed yet (a read returns them
// again until it is), and whether a submission waits for room. A scheduler
// no client ever wrote to never touches it.
#include <cronoq/store/journal.hpp>

#include "engine_mutex.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace cronoq::detail {

class Intake {
public:
    // ---- the wake: any thread ------------------------------------------------------
    /// A pass is wanted; true when the caller must post one (none is
    /// posted or under way: that one will see this want).
    bool want() {
        wanted_.store(true);
        return !scheduled_.exchange(true);
    }
    /// A pass begins: wants from now on call for another.
    void begin_pass() { wanted_.store(false); }
    /// The passes end; true when one was wanted meanwhile and the caller
    /// must run it (it holds the turn again).
    bool end_passes() {
        scheduled_.store(false);
        return wanted_.load() && !scheduled_.exchange(true);
    }

    // ---- taken entries (engine steps) --------------------------------------------------
    /// Forgets the entries taken in batches up to `committed`: their
    /// InboxTaken committed before the read that follows began, which
    /// cannot return them.
    void prune(const EngineHeld&, store::Sequence committed) {
        std::erase_if(taken_, [committed](const auto& e) { return e.second <= committed; });
    }
    /// Whether entry `seq` was taken and its InboxTaken not known committed.
    bool taken(const EngineHeld&, std::uint64_t seq) const { return taken_.count(seq) > 0; }
    /// Entries `seqs` were taken in batch `in`.
    void take(const EngineHeld&, const std::vector<std::uint64_t>& seqs, store::Sequence in) {
        for (std::uint64_t seq : seqs) taken_[seq] = in;
    }

    // ---- room (engine steps) ----------------------------------------------------------
    /// A submission stays in the store until one of its pool's tasks
    /// leaves the queue (OverflowPolicy::Wait).
    void await_room(const EngineHeld&) { room_awaited_ = true; }
    /// Room was made in some pool: true (once) when a submission waited for it.
    bool room_made(const EngineHeld&) { return std::exchange(room_awaited_, false); }

private:
    std::atomic<bool> wanted_{false};
    std::atomic<bool> scheduled_{false};
    std::map<std::uint64_t, store::Sequence> taken_;  // entry seq -> the batch its InboxTaken is in
    bool room_awaited_ = false;
};

}  // namespace cronoq::detail
