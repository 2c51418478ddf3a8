#pragma once
// Submission errors and the expected-like SubmitResult (docs/guide/README.md).
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cronoq {

enum class SubmitError {
    UnknownPool,
    UnknownResource,
    ResourceExceedsCapacity,
    ReservationConflict,
    Cycle,
    UnknownDependency,
    DuplicateKeyInBatch,
    Full,
    Overloaded,
    ShuttingDown,
    Invalid,
    /// With a store: the scheduler stopped leading (fenced, its commits kept
    /// failing, or it shut down) before the submission was committed.
    StoreFailed,
};

std::string_view to_string(SubmitError e);

/// Thrown by the awaitable submission forms and by `SubmitResult::value()`
/// on an error. `what()` reads "<error name>: <message>".
class SubmitException : public std::runtime_error {
public:
    SubmitException(SubmitError error, const std::string& message);
    SubmitError error() const { return error_; }

private:
    SubmitError error_;
};

/// Either a value or a `SubmitError` with a message.
template <class T>
class SubmitResult {
public:
    SubmitResult(T value) : state_(std::in_place_index<0>, std::move(value)) {}
    SubmitResult(SubmitError error, std::string message = {})
        : state_(std::in_place_index<1>, Failure{error, std::move(message)}) {}

    bool has_value() const { return state_.index() == 0; }
    explicit operator bool() const { return has_value(); }

    /// Throws SubmitException when there is no value.
    T& value() & { check(); return std::get<0>(state_); }
    const T& value() const& { check(); return std::get<0>(state_); }
    T&& value() && { check(); return std::get<0>(std::move(state_)); }

    /// Precondition: `!has_value()`.
    SubmitError error() const { return std::get<1>(state_).error; }
    /// Empty when there is a value.
    const std::string& message() const {
        static const std::string none;
        return has_value() ? none : std::get<1>(state_).message;
    }

private:
    struct Failure {
        SubmitError error;
        std::string message;
    };
    void check() const {
        if (!has_value()) throw SubmitException(error(), message());
    }
    std::variant<T, Failure> state_;
};

}  // namespace cronoq
