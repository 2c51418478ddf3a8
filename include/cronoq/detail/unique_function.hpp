#pragma once
// A move-only type-erased callable (std::move_only_function is C++23).
#include <memory>
#include <type_traits>
#include <utility>

namespace cronoq::detail {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
public:
    UniqueFunction() = default;
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, UniqueFunction>)
    UniqueFunction(F&& f) : impl_(std::make_unique<Impl<std::decay_t<F>>>(std::forward<F>(f))) {}

    explicit operator bool() const { return impl_ != nullptr; }
    R operator()(Args... args) { return impl_->call(std::forward<Args>(args)...); }

private:
    struct Base {
        virtual ~Base() = default;
        virtual R call(Args... args) = 0;
    };
    template <class F>
    struct Impl final : Base {
        explicit Impl(F&& f) : f(std::move(f)) {}
        explicit Impl(const F& f) : f(f) {}
        R call(Args... args) override { return f(std::forward<Args>(args)...); }
        F f;
    };
    std::unique_ptr<Base> impl_;
};

}  // namespace cronoq::detail
