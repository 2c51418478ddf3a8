#pragma once
// CancellationToken: how non-coroutine code sees that an attempt was
// abandoned (SPEC §4).
#include <functional>
#include <memory>

namespace cronoq {

namespace detail {
class CancelState;
}

/// A copyable view of one attempt's cancellation. It fires once: when the
/// engine abandons the attempt (task cancelled, timeout, lease expiry,
/// shutdown) and, at the latest, when the attempt has ended. Thread-safe.
class CancellationToken {
public:
    /// A token that never fires.
    CancellationToken();
    explicit CancellationToken(std::shared_ptr<detail::CancelState> state) : state_(std::move(state)) {}

    bool is_cancelled() const;

    /// Runs `callback` once when the token fires: at once, on the calling
    /// thread, if it already has; otherwise on the thread that cancels. The
    /// callback must not block.
    void on_cancel(std::function<void()> callback) const;

    const std::shared_ptr<detail::CancelState>& state() const { return state_; }

private:
    std::shared_ptr<detail::CancelState> state_;
};

}  // namespace cronoq
