#pragma once
// The one door from the driver into the public value types (TaskContext,
// TaskHandle, CancellationToken): they befriend `Access` instead of
// exposing their state or a constructor from it to users.
#include <utility>

namespace cronoq::detail {

struct Access {
    /// Makes a `T` from its detail state.
    template <class T, class... Args>
    static T make(Args&&... args) {
        return T(std::forward<Args>(args)...);
    }
    /// The detail state behind `t`.
    template <class T>
    static const auto& state(const T& t) {
        return t.state_;
    }
};

}  // namespace cronoq::detail
