#pragma once
// Blocking waits that few objects ever see (a thread blocking on a task's
// handle, removing a cancellation callback while another thread runs it)
// share a fixed set of condition variables, chosen by the address waited
// on, instead of one per object: a task's record stays small, and making
// and destroying one costs nothing for the wait it almost never has.
//
// The protocol, for a flag `ready` and a count `sleepers` kept by the object
// (both atomics, every access sequentially consistent):
//   waiter: ++sleepers; park(addr, ready); --sleepers
//   setter: make ready true; if (sleepers > 0) unpark(addr)
// Either the setter sees the sleeper and wakes its slot (taking the slot's
// mutex, so that it cannot slip between the waiter's check and its sleep),
// or the waiter sees the flag before it sleeps.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace cronoq::detail::parking {

struct Slot {
    std::mutex mu;
    std::condition_variable cv;
};

inline Slot& slot_of(const void* address) {
    static std::array<Slot, 64> slots;
    // Objects are at least 16-byte aligned: drop the bits that never vary.
    return slots[(reinterpret_cast<std::uintptr_t>(address) >> 4) % slots.size()];
}

/// Blocks until `ready()` is true (checked under the slot's mutex).
template <class Ready>
void park(const void* address, Ready ready) {
    Slot& s = slot_of(address);
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, ready);
}

/// As above until `deadline`; false if it came first with `ready()` false.
template <class Ready>
bool park_until(const void* address, std::chrono::steady_clock::time_point deadline, Ready ready) {
    Slot& s = slot_of(address);
    std::unique_lock lock(s.mu);
    return s.cv.wait_until(lock, deadline, ready);
}

/// Wakes every thread parked on `address`'s slot (they check their own
/// flags again; sleepers of other objects on the same slot sleep on).
inline void unpark(const void* address) {
    Slot& s = slot_of(address);
    { std::lock_guard lock(s.mu); }
    s.cv.notify_all();
}

}  // namespace cronoq::detail::parking
