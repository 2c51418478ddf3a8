#pragma once
// The executor of a given type that a type-erased executor holds.
//
// `any_executor::target<T>()` in Asio before 1.24 (Debian 12 ships 1.22.1)
// casts to `T` without checking the type it holds: asked for an
// io_context's executor when it holds a strand, it hands the strand's
// bytes back as one, and that executor's `running_in_this_thread()` then
// answers for the whole io_context, so every thread running it took
// itself to be inside every strand. Other types give garbage. The type is
// compared here first, as later Asio does itself.
#include <asio/any_io_executor.hpp>

#include <typeinfo>

namespace cronoq::detail {

/// `ex`'s executor if it is a `T`, else null.
template <class T>
const T* target_of(const asio::any_io_executor& ex) noexcept {
    return ex.target_type() == typeid(T) ? ex.target<T>() : nullptr;
}

}  // namespace cronoq::detail
