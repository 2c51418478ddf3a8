#pragma once
// RemoteWorker<P, O>: runs the attempts of a scheduler's remote pool in this
// process, connected to its WorkerServer over gRPC (docs/remote.md). Part of the
// `cronoq::grpc` component; this header includes Asio but no gRPC.
#include <cronoq/codec.hpp>
#include <cronoq/detail/remote_worker_core.hpp>
#include <cronoq/result.hpp>
#include <cronoq/cancellation_token.hpp>
#include <cronoq/task_context.hpp>

#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <concepts>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace cronoq {

/// One attempt handed to this worker. Cheap to copy; valid after the
/// attempt ends (then it reports cancelled). Accessors as `TaskContext`'s.
template <class P>
class RemoteLease {
public:
    LeaseId id() const { return state_->lease.lease; }
    TaskId task_id() const { return state_->lease.task; }
    std::uint32_t attempt() const { return state_->lease.attempt; }  ///< from 1
    const std::string& pool() const { return state_->lease.pool; }
    /// Decoded by `codec<P>` before the handler runs.
    const std::shared_ptr<const P>& payload() const { return payload_; }
    const std::string& content_type() const { return state_->lease.content_type; }
    const std::string& kind() const { return state_->lease.kind; }
    const std::optional<std::string>& key() const { return state_->key; }
    const Tags& tags() const { return state_->lease.tags; }
    /// Enforced by the server, which aborts the lease when it runs out.
    std::optional<std::chrono::nanoseconds> timeout() const { return state_->lease.timeout; }
    std::optional<std::chrono::system_clock::time_point> deadline() const {
        if (!state_->lease.deadline_unix_ns) return std::nullopt;
        return std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::nanoseconds(*state_->lease.deadline_unix_ns)));
    }
    /// The lease TTL of the pool: a lease not heartbeated within it is lost.
    std::chrono::nanoseconds lease_ttl() const { return state_->lease_ttl; }

    bool is_cancelled() const { return state_->cancel.is_cancelled(); }
    /// Completes when the server aborts the lease, the stream is lost, or
    /// `stop()`'s drain times out. Completion is posted to the awaiting
    /// coroutine's executor. Asio cancellation (`terminal`, `partial`,
    /// `total`) ends only this wait, with `operation_aborted`.
    asio::awaitable<void> cancelled() const {
        auto waits = state_->cancel.waits();  // the frame keeps the list alive
        co_await waits->async_wait(asio::use_awaitable);
    }
    CancellationToken cancellation_token() const {
        return detail::Access::make<CancellationToken>(
            std::shared_ptr<detail::CancelState>(state_, &state_->cancel));
    }
    /// Sends a heartbeat now; the worker also sends one for every running
    /// lease every `lease_ttl / 3`, so handlers need not call it.
    void heartbeat() const {
        if (auto core = state_->core.lock()) core->heartbeat(*state_);
    }

private:
    template <class, class>
    friend class RemoteWorker;
    RemoteLease(std::shared_ptr<detail::RemoteLeaseState> state, std::shared_ptr<const P> payload)
        : state_(std::move(state)), payload_(std::move(payload)) {}

    std::shared_ptr<detail::RemoteLeaseState> state_;
    std::shared_ptr<const P> payload_;
};

/// A worker of one remote pool: connects to `options.target`, registers
/// with `options.slots`, runs each lease with `handler` (at most the
/// granted slots at once), heartbeats them every `lease_ttl / 3` and
/// reports each outcome:
///
/// - a value: `complete` (encoded by `codec<O>`);
/// - `TaskError::retryable` / `retry_after` / `permanent`: `fail`;
/// - `TaskError::reject(reason)`: `nack`, the lease goes to another worker
///   without counting an attempt;
/// - `TaskError::cancelled()`: `cancelled`, the task ends Cancelled (after
///   an abort nothing is reported: the lease is already gone);
/// - an exception: a retryable failure, "panic: <what()>".
///
/// A lost stream cancels the running handlers (the server fails their
/// leases as retryable) and reconnects after `initial_backoff`, doubling up
/// to `max_backoff`; after `shutdown{not_leader}` it reconnects at once.
/// A refusal that redirects it (a process that does not lead: trailing
/// metadata `cronoq-shard`, `cronoq-shard-endpoint`) is followed at once,
/// never from `https://` to `http://` without `insecure_redirect_http`;
/// loops back off; after a lost stream or `not_leader` it starts again
/// from its own `target` (docs/remote.md, Redirects).
template <class P, class O>
class RemoteWorker {
public:
    using Lease = RemoteLease<P>;

    /// `handler(RemoteLease<P>) -> asio::awaitable<Result<O>>`. Throws
    /// `RemoteWorkerError` (INVALID_ARGUMENT) for invalid options: no target
    /// or pool, no slots, `https://` without `tls`, `tls` with `http://`,
    /// an unreadable TLS file.
    template <class Handler>
        requires std::invocable<Handler&, RemoteLease<P>>
    RemoteWorker(RemoteWorkerOptions options, Handler handler)
        : core_(detail::RemoteWorkerCore::create(std::move(options), erase(std::move(handler)))) {}

    /// Serves until `stop()` and its drain, reconnecting as needed; runs
    /// the handlers on the awaiting coroutine's executor. Throws
    /// `RemoteWorkerError` when the server refuses the worker for good (a
    /// rejected token, an unknown pool, another protocol version). Asio
    /// cancellation of the awaiting coroutine is not supported: use `stop()`.
    asio::awaitable<void> run() {
        auto core = core_;
        auto running = core->run();
        co_await std::move(running);
    }
    /// From any thread: stops taking leases (`set_slots{0}`), lets running
    /// ones finish for `drain_timeout`, then cancels the rest (their leases
    /// fail as retryable on the server) and ends `run()`.
    void stop() { core_->stop(); }
    /// The slots the server granted on the current stream (0 when none).
    std::size_t granted_slots() const { return core_->granted_slots(); }

private:
    template <class Handler>
    static detail::RemoteWorkerCore::Handler erase(Handler handler) {
        return [handler = std::move(handler)](
                   std::shared_ptr<detail::RemoteLeaseState> state) -> asio::awaitable<detail::RemoteOutcome> {
            std::shared_ptr<const P> payload;
            std::string error;
            try {
                payload = std::make_shared<const P>(codec<P>::decode(state->lease.payload));
            } catch (const std::exception& e) {
                error = e.what();
            }
            if (!payload) co_return detail::RemoteReport::Fail{"decode: " + error, true, std::nullopt};
            std::optional<Result<O>> result;
            try {
                auto work = handler(RemoteLease<P>(std::move(state), std::move(payload)));
                result.emplace(co_await std::move(work));
            } catch (const TaskError& e) {
                result.emplace(e);
            } catch (const std::exception& e) {
                error = e.what();
            } catch (...) {
                error = "unknown exception";
            }
            if (!result) co_return detail::RemoteReport::Fail{"panic: " + error, false, std::nullopt};
            co_return outcome(std::move(*result));
        };
    }

    static detail::RemoteOutcome outcome(Result<O> result) {
        if (result.has_value()) {
            if constexpr (std::is_void_v<O>) {
                return detail::RemoteReport::Complete{};
            } else {
                try {
                    return detail::RemoteReport::Complete{codec<O>::encode(result.value())};
                } catch (const std::exception& e) {
                    return detail::RemoteReport::Fail{std::string("encode: ") + e.what(), true, std::nullopt};
                }
            }
        }
        const TaskError& e = result.error();
        if (e.rejected()) return detail::RemoteReport::Nack{e.message()};
        switch (e.kind()) {
            case TaskError::Kind::Retryable: return detail::RemoteReport::Fail{e.message(), false, e.retry_after()};
            case TaskError::Kind::Permanent: return detail::RemoteReport::Fail{e.message(), true, std::nullopt};
            case TaskError::Kind::Cancelled: break;
        }
        return detail::RemoteReport::Cancelled{};
    }

    std::shared_ptr<detail::RemoteWorkerCore> core_;
};

}  // namespace cronoq
