#pragma once
// A move-only type-erased callable (std::move_only_function is C++23).
// Callables up to `inline_size` bytes live inside it: the waiters of every
// awaitable in the driver (a coroutine's handler and its work-tracking
// executor) fit, so waiting allocates nothing.
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace cronoq::detail {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
public:
    static constexpr std::size_t inline_size = 96;

    UniqueFunction() = default;
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, UniqueFunction> && std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
    UniqueFunction(F&& f) {
        using Fn = std::decay_t<F>;
        if constexpr (fits_inline<Fn>) {
            ::new (static_cast<void*>(buffer_)) Fn(std::forward<F>(f));
            ops_ = &inline_ops<Fn>;
        } else {
            *reinterpret_cast<Fn**>(buffer_) = new Fn(std::forward<F>(f));
            ops_ = &heap_ops<Fn>;
        }
    }
    UniqueFunction(UniqueFunction&& other) noexcept : ops_(other.ops_) {
        if (ops_) ops_->move(other.buffer_, buffer_);
        other.ops_ = nullptr;
    }
    UniqueFunction& operator=(UniqueFunction&& other) noexcept {
        if (this != &other) {
            reset();
            ops_ = other.ops_;
            if (ops_) ops_->move(other.buffer_, buffer_);
            other.ops_ = nullptr;
        }
        return *this;
    }
    UniqueFunction(const UniqueFunction&) = delete;
    UniqueFunction& operator=(const UniqueFunction&) = delete;
    ~UniqueFunction() { reset(); }

    explicit operator bool() const { return ops_ != nullptr; }
    R operator()(Args... args) { return ops_->call(buffer_, std::forward<Args>(args)...); }

private:
    struct Ops {
        R (*call)(void* self, Args&&... args);
        void (*move)(void* from, void* to) noexcept;  // leaves `from` destroyed
        void (*destroy)(void* self) noexcept;
    };

    template <class Fn>
    static constexpr bool fits_inline = sizeof(Fn) <= inline_size && alignof(Fn) <= alignof(std::max_align_t) &&
                                        std::is_nothrow_move_constructible_v<Fn>;

    template <class Fn>
    static constexpr Ops inline_ops{
        [](void* self, Args&&... args) -> R { return (*static_cast<Fn*>(self))(std::forward<Args>(args)...); },
        [](void* from, void* to) noexcept {
            ::new (to) Fn(std::move(*static_cast<Fn*>(from)));
            static_cast<Fn*>(from)->~Fn();
        },
        [](void* self) noexcept { static_cast<Fn*>(self)->~Fn(); },
    };

    template <class Fn>
    static constexpr Ops heap_ops{
        [](void* self, Args&&... args) -> R { return (**static_cast<Fn**>(self))(std::forward<Args>(args)...); },
        [](void* from, void* to) noexcept { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
        [](void* self) noexcept { delete *static_cast<Fn**>(self); },
    };

    void reset() noexcept {
        if (ops_) ops_->destroy(buffer_);
        ops_ = nullptr;
    }

    const Ops* ops_ = nullptr;
    alignas(std::max_align_t) unsigned char buffer_[inline_size];
};

}  // namespace cronoq::detail
