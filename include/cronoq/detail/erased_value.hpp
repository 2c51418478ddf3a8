#pragma once
// A payload or an output with its type erased: held in place when it is
// small and trivially copyable, shared otherwise.
//
// Most tasks carry an id or a few numbers and return as little. Kept in
// place, such a value travels from the Task<P> into the task's record, and
// an output from the attempt into the handles' state, with no allocation of
// its own. Its users still get a `std::shared_ptr<const T>`: one that
// shares the object holding the value (`share(owner)`), so an output kept
// after its handles keeps the task's record with it.
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace cronoq::detail {

class ErasedValue {
public:
    static constexpr std::size_t inline_size = 16;
    static constexpr std::size_t inline_align = 8;
    /// Whether a T is held in place. Trivially copyable: it is copied with
    /// its bytes and needs no destructor.
    template <class T>
    static constexpr bool fits_inline =
        std::is_trivially_copyable_v<T> && sizeof(T) <= inline_size && alignof(T) <= inline_align;

    /// No value (a `void` output, a moved-from payload).
    ErasedValue() noexcept : shared_() {}
    ErasedValue(std::nullptr_t) noexcept : shared_() {}
    /// A shared value (a decoded payload or output, `Task::from_shared`).
    ErasedValue(std::shared_ptr<const void> p) noexcept : shared_(std::move(p)) {}

    /// `v`, in place when it fits, else in a new shared object.
    template <class T>
    static ErasedValue make(T&& v) {
        using U = std::remove_cvref_t<T>;
        if constexpr (fits_inline<U>) {
            ErasedValue e(in_place_tag{});
            ::new (static_cast<void*>(e.bytes_)) U(std::forward<T>(v));
            return e;
        } else {
            return ErasedValue(std::make_shared<const U>(std::forward<T>(v)));
        }
    }

    ErasedValue(const ErasedValue& o) noexcept : in_place_(o.in_place_) {
        if (in_place_)
            copy_bytes(o);
        else
            ::new (&shared_) std::shared_ptr<const void>(o.shared_);
    }
    ErasedValue(ErasedValue&& o) noexcept { take(std::move(o)); }
    ErasedValue& operator=(const ErasedValue& o) noexcept {
        if (this != &o) assign(ErasedValue(o));
        return *this;
    }
    ErasedValue& operator=(ErasedValue&& o) noexcept {
        if (this != &o) assign(std::move(o));
        return *this;
    }
    ~ErasedValue() {
        if (!in_place_) shared_.~shared_ptr();
    }

    /// The value; null when there is none.
    const void* get() const noexcept { return in_place_ ? static_cast<const void*>(bytes_) : shared_.get(); }
    explicit operator bool() const noexcept { return in_place_ || shared_ != nullptr; }
    bool in_place() const noexcept { return in_place_; }

    /// The value as a shared pointer. Held in place, it shares `owner`,
    /// which must own this ErasedValue and not change it while the result
    /// lives (a record's payload, a finished task's output).
    template <class Owner>
    std::shared_ptr<const void> share(const std::shared_ptr<Owner>& owner) const noexcept {
        if (in_place_) return std::shared_ptr<const void>(owner, bytes_);
        return shared_;
    }

    void reset() noexcept { assign(ErasedValue()); }

private:
    struct in_place_tag {};
    // Zeroed first: a value smaller than the place is copied with all of
    // its bytes, none of them left unset.
    explicit ErasedValue(in_place_tag) noexcept : bytes_{}, in_place_(true) {}

    void copy_bytes(const ErasedValue& o) noexcept {
        for (std::size_t i = 0; i < inline_size; ++i) bytes_[i] = o.bytes_[i];
    }
    // Makes this (holding nothing live) what `o` is; `o` is a temporary or
    // about to be dropped, so its shared pointer may be moved out.
    void take(ErasedValue&& o) noexcept {
        in_place_ = o.in_place_;
        if (in_place_)
            copy_bytes(o);
        else
            ::new (&shared_) std::shared_ptr<const void>(std::move(o.shared_));
    }
    void assign(ErasedValue&& o) noexcept {
        if (!in_place_) shared_.~shared_ptr();
        take(std::move(o));
    }

    union {
        std::shared_ptr<const void> shared_;
        alignas(inline_align) unsigned char bytes_[inline_size];
    };
    bool in_place_ = false;
};

}  // namespace cronoq::detail
