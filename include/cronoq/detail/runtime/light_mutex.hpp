#pragma once
// A mutex for the driver's short critical sections.
#include <cronoq/detail/thread_safety.hpp>

#include <atomic>
#include <cstdint>

namespace cronoq::detail {

/// A mutex whose uncontended lock and unlock are one atomic instruction
/// each, inline: a round trip through the driver takes its locks several
/// times, and std::mutex calls into the C library for every lock and
/// unlock. A contended lock sleeps in `std::atomic::wait` (a futex on
/// Linux) after the standard library's short spin; the state says whether
/// anyone may be asleep, so an unlock wakes only then (the classic
/// three-state futex mutex). Not recursive; meets Lockable.
///
/// Every operation on the state is sequentially consistent (on x86 the
/// same instructions as acquire and release), so that a caller may pair
/// an unlock or a try_lock with a sequentially consistent flag of its own
/// instead of a fence: the driver's inbox does (scheduler_step.cpp).
class CRONOQ_CAPABILITY("mutex") LightMutex {
public:
    void lock() noexcept CRONOQ_ACQUIRE() {
        std::uint32_t seen = unlocked;
        if (!state_.compare_exchange_strong(seen, locked, std::memory_order_seq_cst))
            lock_contended(seen);
    }
    bool try_lock() noexcept CRONOQ_TRY_ACQUIRE(true) {
        std::uint32_t seen = unlocked;
        return state_.compare_exchange_strong(seen, locked, std::memory_order_seq_cst);
    }
    void unlock() noexcept CRONOQ_RELEASE() {
        if (state_.exchange(unlocked, std::memory_order_seq_cst) == contended) state_.notify_one();
    }

private:
    static constexpr std::uint32_t unlocked = 0;
    static constexpr std::uint32_t locked = 1;
    static constexpr std::uint32_t contended = 2;  // locked, and a thread may be waiting

    void lock_contended(std::uint32_t seen) noexcept {
        // Marked contended before sleeping, so that the holder's unlock
        // wakes a sleeper; taken when the exchange finds it unlocked.
        if (seen != contended) seen = state_.exchange(contended, std::memory_order_seq_cst);
        while (seen != unlocked) {
            state_.wait(contended, std::memory_order_relaxed);
            seen = state_.exchange(contended, std::memory_order_seq_cst);
        }
    }

    std::atomic<std::uint32_t> state_{unlocked};
};

}  // namespace cronoq::detail
