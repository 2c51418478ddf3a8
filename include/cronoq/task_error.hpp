#pragma once
// The error an executor reports for an attempt (docs/guide/executors.md).
#include <cronoq/duration.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace cronoq {

/// How an attempt failed. `TaskError` is also an exception type: throwing it
/// from an executor is the same as returning it. Any other exception that
/// escapes an executor fails the attempt permanently as "panic: <what()>".
class TaskError : public std::runtime_error {
public:
    enum class Kind {
        Retryable,  ///< retried under the retry policy
        Permanent,  ///< never retried
        Cancelled,  ///< the executor observed cancellation
    };

    static TaskError retryable(std::string message) { return {Kind::Retryable, std::move(message), std::nullopt}; }
    /// Retryable, and the next attempt starts no sooner than `after` from now
    /// (any `std::chrono::duration`, saturated into nanoseconds).
    template <class Rep, class Period>
    static TaskError retry_after(std::string message, std::chrono::duration<Rep, Period> after) {
        return {Kind::Retryable, std::move(message), saturating_ns(after)};
    }
    static TaskError permanent(std::string message) { return {Kind::Permanent, std::move(message), std::nullopt}; }
    static TaskError cancelled() { return {Kind::Cancelled, "cancelled", std::nullopt}; }
    /// Gives the attempt back unrun (docs/remote.md): from a `RemoteWorker`'s
    /// handler, a `nack`: the lease goes to another worker of the pool
    /// without counting an attempt. Elsewhere (a local executor, which has
    /// no other worker to hand it to) it is a retryable failure, which is
    /// why its kind is `Retryable`; `rejected()` tells it apart.
    static TaskError reject(std::string reason) {
        TaskError e{Kind::Retryable, std::move(reason), std::nullopt};
        e.rejected_ = true;
        return e;
    }
    /// Retryable, with the exception's message.
    static TaskError from_err(const std::exception& e) { return retryable(e.what()); }
    /// Retryable, with the error code's message.
    static TaskError from_err(std::error_code ec) { return retryable(ec.message()); }

    Kind kind() const { return kind_; }
    const std::string& message() const { return message_; }
    std::optional<std::chrono::nanoseconds> retry_after() const { return retry_after_; }
    /// Made by `reject`.
    bool rejected() const { return rejected_; }

private:
    TaskError(Kind kind, std::string message, std::optional<std::chrono::nanoseconds> after)
        : std::runtime_error(message), kind_(kind), message_(std::move(message)), retry_after_(after) {}

    Kind kind_;
    std::string message_;
    std::optional<std::chrono::nanoseconds> retry_after_;
    bool rejected_ = false;
};

}  // namespace cronoq
