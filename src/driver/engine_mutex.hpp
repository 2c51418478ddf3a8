#pragma once
// The engine's mutex, and the proof of holding it that the driver's
// components take (docs/design.md, "Engine steps").
//
// Inside the driver (driver.hpp) Clang's thread-safety analysis checks that
// every member guarded by the mutex, and every call that needs it, is
// reached with the mutex held (the `driver_thread_safety` test). A component
// cannot name another object's mutex in its annotations (the analysis does
// not see that two references are one object), so what needs the mutex in
// a component takes an `EngineHeld&`: only the driver makes one, in code
// the analysis has checked to hold the mutex.
#include <cronoq/detail/runtime/light_mutex.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/detail/thread_safety.hpp>

#include <cstdint>

namespace cronoq::detail {

/// The engine's mutex, counting its acquisitions: a figure of the driver's
/// cost per task that, unlike time, no noise can move.
class CRONOQ_CAPABILITY("mutex") EngineMutex {
public:
    void lock() CRONOQ_ACQUIRE() {
        mu_.lock();
        ++acquisitions_;
    }
    bool try_lock() CRONOQ_TRY_ACQUIRE(true) {
        if (!mu_.try_lock()) return false;
        ++acquisitions_;
        return true;
    }
    void unlock() CRONOQ_RELEASE() { mu_.unlock(); }
    std::uint64_t acquisitions() const CRONOQ_REQUIRES(this) { return acquisitions_; }

private:
    LightMutex mu_;
    std::uint64_t acquisitions_ = 0;
};

/// Holds `M` for its scope, in a way the analysis sees (std::lock_guard is
/// not annotated).
template <class M>
class CRONOQ_SCOPED_CAPABILITY ScopedLock {
public:
    explicit ScopedLock(M& m) CRONOQ_ACQUIRE(m) : m_(m) { m_.lock(); }
    ~ScopedLock() CRONOQ_RELEASE() { m_.unlock(); }
    ScopedLock(const ScopedLock&) = delete;
    ScopedLock& operator=(const ScopedLock&) = delete;

private:
    M& m_;
};

/// Proof that the engine's mutex is held, for as long as the reference is
/// passed down one call chain; made only by the driver (`State::held()`).
class EngineHeld {
public:
    EngineHeld(const EngineHeld&) = delete;
    EngineHeld& operator=(const EngineHeld&) = delete;

private:
    friend struct SchedulerCore::State;
    EngineHeld() = default;
};

}  // namespace cronoq::detail
