#pragma once
// TaskContext: what an executor knows of the attempt it runs (docs/guide/executors.md).
#include <cronoq/cancellation_token.hpp>
#include <cronoq/detail/access.hpp>
#include <cronoq/ids.hpp>

#include <asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cronoq {

using Tags = std::vector<std::pair<std::string, std::string>>;

namespace detail {
struct AttemptState;
}

/// Cheap to copy. Valid after the attempt ends, but then reports cancelled.
/// Made by the scheduler for each attempt; user code only receives it.
class TaskContext {
public:
    TaskId id() const;
    LeaseId lease() const;
    std::uint32_t attempt() const;  ///< from 1
    const std::string& pool() const;
    const std::string& kind() const;
    const std::optional<std::string>& key() const;
    /// The task's fair key (docs/guide/fairness.md); "" without one.
    const std::string& fair_key() const;
    const Tags& tags() const;
    std::optional<std::string> tag(std::string_view name) const;
    std::optional<std::chrono::system_clock::time_point> deadline() const;
    std::optional<std::chrono::nanoseconds> timeout() const;
    const std::optional<std::string>& traceparent() const;

    bool is_cancelled() const;
    /// Waits until the attempt is cancelled: by the engine (task cancelled,
    /// timeout, lease expiry, shutdown) or because the attempt has ended.
    ///
    /// Completion: once cancelled (at once if it already is), never
    /// otherwise; on the awaiting coroutine's executor, never inline in the
    /// call that cancels (see "Awaitables" in scheduler.hpp). Throws nothing
    /// but the cancellation below.
    ///
    /// Asio cancellation: honours `terminal`, `partial` and `total` (a
    /// coroutine's default filter lets only `terminal` through). Any of
    /// them ends the wait with `asio::error::operation_aborted` (thrown as
    /// `std::system_error`) and changes nothing else.
    ///
    /// To race work against this wait, use `cronoq::with_cancellation(ctx,
    /// work)` (with_cancellation.hpp), not Asio's `work || ctx.cancelled()`:
    /// `||` waits for the first branch to *succeed*, so a `work` that throws
    /// at once stays hidden until the attempt is cancelled or times out.
    asio::awaitable<void> cancelled() const;
    CancellationToken cancellation_token() const;

    /// Keeps the attempt's lease alive for another `lease_ttl`. A cheap
    /// no-op when the pool has no TTL, and after the attempt ended.
    void heartbeat() const;

private:
    friend struct detail::Access;
    explicit TaskContext(std::shared_ptr<detail::AttemptState> state) : state_(std::move(state)) {}

    std::shared_ptr<detail::AttemptState> state_;
};

}  // namespace cronoq
