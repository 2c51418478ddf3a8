#pragma once
// Reports that found the engine's mutex taken: attempt ends and remote
// workers' reports, left for whichever step holds the engine to serve when
// it lets go (docs/design.md, "Engine steps"), so that one acquisition
// serves many reports. Inline: every attempt's end may pass here.
//
// Every operation on the flag is sequentially consistent where it pairs
// with the engine's mutex: a reporter stores the flag, then tries the
// mutex; a holder lets go of the mutex, then loads the flag. Either the
// reporter's try_lock sees the unlock, or the holder sees the flag.
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/thread_safety.hpp>

#include "attempt_state.hpp"
#include "engine_mutex.hpp"
#include "remote_bridge.hpp"

#include <atomic>
#include <iterator>
#include <vector>

namespace cronoq::detail {

/// Moves what `from` holds to the end of `to` and empties `from`; into an
/// empty `to` by a swap, so that both buffers keep their capacity.
template <class T>
void move_all(std::vector<T>& to, std::vector<T>& from) {
    if (to.empty()) {
        to.swap(from);
    } else {
        std::move(from.begin(), from.end(), std::back_inserter(to));
        from.clear();
    }
}

class Inbox {
public:
    /// Whether anything waits: `acquire` before taking it, sequentially
    /// consistent after letting go of the engine's mutex.
    bool filled(std::memory_order order) const { return filled_.load(order); }

    /// `put(ends, remote)` moves the report(s) into the vectors it is given;
    /// the caller tries the engine's mutex next.
    template <class Put>
    void put(Put&& put) {
        ScopedLock lock(mu_);
        put(ends_, remote_);
        filled_.store(true, std::memory_order_seq_cst);
    }

    /// Moves what waits to the end of `ends` and `remote`.
    void take(std::vector<AttemptEnd>& ends, std::vector<RemoteEnd>& remote) {
        if (!filled_.load(std::memory_order_acquire)) return;
        ScopedLock lock(mu_);
        move_all(ends, ends_);
        move_all(remote, remote_);
        filled_.store(false, std::memory_order_relaxed);
    }

private:
    LightMutex mu_;
    std::vector<AttemptEnd> ends_ CRONOQ_GUARDED_BY(mu_);
    std::vector<RemoteEnd> remote_ CRONOQ_GUARDED_BY(mu_);
    std::atomic<bool> filled_{false};  // either has something
};

}  // namespace cronoq::detail
