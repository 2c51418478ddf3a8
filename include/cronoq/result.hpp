#pragma once
// Result<O>: what an attempt produces, an output or a TaskError (docs/guide/executors.md).
#include <cronoq/task_error.hpp>

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

namespace cronoq {

/// Holds an `O` or a `TaskError`; implicitly constructible from either, so an
/// executor can `co_return out;` or `co_return TaskError::permanent("...");`.
template <class O>
class Result {
public:
    /// A value-initialized `O`, as `std::expected` has: what Asio's
    /// co_spawn needs of a coroutine's result, so that an executor's
    /// coroutine is spawned as it is (its attempt's end is never a default
    /// `Result`: a thrown exception travels beside it).
    Result()
        requires std::is_default_constructible_v<O>
        : state_(std::in_place_index<0>) {}
    template <class U = O>
        requires std::is_constructible_v<O, U&&> && (!std::is_same_v<std::remove_cvref_t<U>, TaskError>) &&
                 (!std::is_same_v<std::remove_cvref_t<U>, Result>)
    Result(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}
    Result(TaskError error) : state_(std::in_place_index<1>, std::move(error)) {}

    bool has_value() const { return state_.index() == 0; }
    explicit operator bool() const { return has_value(); }

    /// Precondition: `has_value()`.
    O& value() & { return std::get<0>(state_); }
    const O& value() const& { return std::get<0>(state_); }
    O&& value() && { return std::get<0>(std::move(state_)); }
    /// Precondition: `!has_value()`.
    const TaskError& error() const { return std::get<1>(state_); }

private:
    std::variant<O, TaskError> state_;
};

/// The result of an executor with no output: `co_return Result<void>{};`
/// (or `co_return cronoq::ok();`) for success.
template <>
class Result<void> {
public:
    Result() = default;
    Result(TaskError error) : error_(std::move(error)) {}

    bool has_value() const { return !error_.has_value(); }
    explicit operator bool() const { return has_value(); }
    void value() const {}
    /// Precondition: `!has_value()`.
    const TaskError& error() const { return *error_; }

private:
    std::optional<TaskError> error_;
};

/// Success of a `Result<void>` executor.
inline Result<void> ok() { return {}; }

}  // namespace cronoq
