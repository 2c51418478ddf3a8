#pragma once
// CancellationToken: how non-coroutine code sees that an attempt was
// abandoned (docs/guide/executors.md).
#include <cronoq/detail/access.hpp>

#include <cstdint>
#include <functional>
#include <memory>

namespace cronoq {

namespace detail {
class CancelState;
}

/// What `CancellationToken::on_cancel` returns: the way to take a callback
/// back. Dropping it leaves the callback registered (so that
/// `token.on_cancel(f);` keeps `f`); `remove()` takes it back.
class CancellationRegistration {
public:
    /// Registers nothing; `remove()` returns false.
    CancellationRegistration() = default;

    /// Takes the callback back: true if it was removed before it ran, so it
    /// never will. False if it has run, is running, or was never
    /// registered (the token had already fired); when it is running on
    /// another thread, `remove` first waits for it to return, so that what
    /// the callback uses may be destroyed right after. Called from inside
    /// the callback itself, it returns false at once. Thread-safe;
    /// later calls return false.
    bool remove();

private:
    friend struct detail::Access;
    CancellationRegistration(std::weak_ptr<detail::CancelState> state, std::uint64_t id)
        : state_(std::move(state)), id_(id) {}

    std::weak_ptr<detail::CancelState> state_;
    std::uint64_t id_ = 0;
};

/// A copyable view of one attempt's cancellation. It fires once: when the
/// engine abandons the attempt (task cancelled, timeout, lease expiry,
/// shutdown) and, at the latest, when the attempt has ended. Thread-safe.
class CancellationToken {
public:
    /// A token that never fires.
    CancellationToken();

    bool is_cancelled() const;

    /// Runs `callback` once when the token fires: at once, on the calling
    /// thread, if it already has (what it throws then reaches the caller);
    /// otherwise on the thread that cancels, where what it throws is
    /// logged and the other callbacks still run. The callback must not
    /// block. The registration returned takes it back (`remove()`).
    CancellationRegistration on_cancel(std::function<void()> callback) const;

private:
    friend struct detail::Access;
    explicit CancellationToken(std::shared_ptr<detail::CancelState> state) : state_(std::move(state)) {}

    std::shared_ptr<detail::CancelState> state_;
};

}  // namespace cronoq
