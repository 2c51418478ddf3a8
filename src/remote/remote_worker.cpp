// RemoteWorkerCore: the C++ worker's connection loop. Everything it keeps
// lives on one strand; gRPC's threads, handlers and stop() hand it events
// through a queue, and each wakes the strand's one waiting coroutine.
#include <cronoq/detail/remote_worker_core.hpp>

#include "client_stream.hpp"
#include "redirect_chain.hpp"

#include <cronoq/logging.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>

#include <spdlog/spdlog.h>

namespace cronoq::detail {

namespace {

using Clock = std::chrono::steady_clock;

struct FromStream {
    std::uint64_t connection;
    ServerEvent event;
};
struct HandlerDone {
    std::uint64_t connection;
    LeaseId lease;
    RemoteOutcome outcome;
};
struct HeartbeatWanted {
    std::uint64_t connection;
    LeaseId lease;
};
struct StopRequested {};
using Event = std::variant<FromStream, HandlerDone, HeartbeatWanted, StopRequested>;

/// How one stream ended.
struct StreamEnd {
    bool registered = false;
    bool not_leader = false;
    int code = 0;
    std::string message;
    /// A refusal's `cronoq-shard` and `cronoq-shard-endpoint`.
    std::optional<std::string> shard, endpoint;
    /// The server does not lead the pool's shard: never fatal.
    bool redirect() const { return code == RemoteWorkerError::Code::FailedPrecondition && shard.has_value(); }
    /// What reconnecting cannot fix: a rejected token, an unknown pool,
    /// another protocol version or a pool that is not remote.
    bool fatal() const {
        using Code = RemoteWorkerError::Code;
        return !redirect() && (code == Code::Unauthenticated || code == Code::NotFound || code == Code::FailedPrecondition);
    }
};

/// `now + d`, saturated (a drain timeout or TTL may be "forever").
Clock::time_point after(Clock::time_point now, std::chrono::nanoseconds d) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::time_point::max() - now);
    return d >= left ? Clock::time_point::max() : now + std::chrono::duration_cast<Clock::duration>(d);
}

RemoteReport report_of(LeaseId lease, RemoteOutcome outcome) {
    return std::visit([&](auto&& what) { return RemoteReport{lease, std::move(what)}; }, std::move(outcome));
}

/// The worker's event queue, and all that gRPC's threads touch. It is kept
/// apart from the worker so that gRPC's threads never hold the last
/// reference to the worker: destroying the worker's channel inside a gRPC
/// callback can shut gRPC down under its own feet. Its I/O objects exist
/// only while the worker's loop runs (`open`, `close`), so that whichever
/// thread drops the inbox last, after the io_context is gone, destroys none.
class Inbox : public std::enable_shared_from_this<Inbox> {
public:
    /// On the strand, before the loop starts. False when run() ran before.
    bool open(const asio::strand<asio::any_io_executor>& strand) {
        std::lock_guard lock(mu_);
        if (opened_) return false;
        opened_ = true;
        strand_.emplace(strand);
        wake_.emplace(strand);
        deadline_.emplace(strand);
        return true;
    }

    /// On the strand, as the loop ends (or its frame is destroyed).
    void close() {
        std::lock_guard lock(mu_);
        wake_.reset();
        deadline_.reset();
        strand_.reset();
    }

    /// From any thread. Before open() and after close() it only queues.
    void push(Event event) {
        std::lock_guard lock(mu_);
        events_.push_back(std::move(event));
        if (!strand_ || wake_pending_) return;
        wake_pending_ = true;
        asio::post(*strand_, [self = shared_from_this()] {
            std::lock_guard lock(self->mu_);
            self->wake_pending_ = false;
            if (self->wake_) self->wake_->cancel();
        });
    }

    /// True the first time only.
    bool request_stop() {
        std::lock_guard lock(mu_);
        return !std::exchange(stop_requested_, true);
    }

    bool stop_requested() {
        std::lock_guard lock(mu_);
        return stop_requested_;
    }

    /// The next event, or none once `until` passed. On the strand; a push
    /// between the check and the wait cancels the wait (its post runs on
    /// the strand, after this coroutine suspended).
    ///
    /// Two timers, so that a wait costs no system call: `wake_` waits
    /// for ever and only a push (or the deadline) cancels it; `deadline_`
    /// stays armed for `until` across waits and is moved only when
    /// `until` changes (a heartbeat's or a drain's time). A timer that is
    /// not the io_context's earliest is queued without touching the
    /// kernel's timer; re-arming one timer for `until` at every wait made
    /// it the earliest each time: a `timerfd_settime` per wake-up
    /// (docs/remote.md, "Writes").
    asio::awaitable<std::optional<Event>> next(Clock::time_point until) {
        for (;;) {
            asio::steady_timer* wake = nullptr;
            {
                std::lock_guard lock(mu_);
                if (!events_.empty()) {
                    std::optional<Event> event(std::move(events_.front()));
                    events_.pop_front();
                    co_return event;
                }
                wake = &*wake_;  // only close(), on this strand, resets it
            }
            if (Clock::now() >= until) co_return std::nullopt;
            arm_deadline(until);
            wake->expires_at(Clock::time_point::max());
            std::error_code ec;
            co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
    }

private:
    /// On the strand. The deadline's handler only cancels the wait: the
    /// waiting loop finds `until` passed.
    void arm_deadline(Clock::time_point until) {
        if (until == armed_until_) return;
        armed_until_ = until;
        deadline_->expires_at(until);  // cancels the wait for the former time
        if (until == Clock::time_point::max()) return;
        deadline_->async_wait([self = shared_from_this()](std::error_code ec) {
            if (ec) return;  // moved, or the inbox closed
            self->armed_until_ = Clock::time_point::min();
            std::lock_guard lock(self->mu_);
            if (self->wake_) self->wake_->cancel();
        });
    }

    std::mutex mu_;
    std::deque<Event> events_;
    bool opened_ = false;
    bool stop_requested_ = false;
    bool wake_pending_ = false;
    std::optional<asio::strand<asio::any_io_executor>> strand_;
    std::optional<asio::steady_timer> wake_;
    std::optional<asio::steady_timer> deadline_;
    Clock::time_point armed_until_ = Clock::time_point::max();  // deadline_'s, on the strand
};

class Worker final : public RemoteWorkerCore, public std::enable_shared_from_this<Worker> {
public:
    Worker(RemoteWorkerOptions options, Handler handler)
        : options_(std::move(options)),
          handler_(std::move(handler)),
          home_(parse_target(options_.target, options_.tls.has_value())),
          home_channel_(make_channel(home_, options_.tls)),
          chain_(options_.insecure_redirect_http),
          at_(home_),
          channel_(home_channel_) {}

    // Only when run() cannot go on (its io_context destroyed mid-stream):
    // a stream left open would hold the worker's leases on the server.
    ~Worker() override {
        if (stream_) stream_->cancel();
    }

    asio::awaitable<void> run() override {
        auto self = shared_from_this();
        handler_executor_ = co_await asio::this_coro::executor;
        auto strand = asio::make_strand(handler_executor_);
        if (!inbox_->open(strand)) throw std::logic_error("cronoq::RemoteWorker::run: called twice");
        auto serving = asio::co_spawn(strand, self->serve(), asio::use_awaitable);
        co_await std::move(serving);
    }

    void stop() override {
        if (inbox_->request_stop()) inbox_->push(StopRequested{});
    }

    void heartbeat(const RemoteLeaseState& lease) override {
        inbox_->push(HeartbeatWanted{lease.connection, lease.lease.lease});
    }

    std::size_t granted_slots() const override { return granted_.load(std::memory_order_relaxed); }

private:
    /// Connects, serves and reconnects until stop() or a refusal for good.
    asio::awaitable<void> serve() {
        // The inbox's I/O objects go with this frame, which the io_context
        // either ends or destroys.
        struct CloseInbox {
            Inbox& inbox;
            ~CloseInbox() { inbox.close(); }
        } close_inbox{*inbox_};
        auto backoff = std::max(options_.initial_backoff, std::chrono::nanoseconds(1));
        std::optional<StreamEnd> refused;
        while (!inbox_->stop_requested()) {
            const StreamEnd end = co_await serve_stream();
            if (end.fatal()) {
                refused = end;
                break;
            }
            if (inbox_->stop_requested()) break;
            if (end.registered) {
                backoff = options_.initial_backoff;
                chain_.reset();
            }
            if (end.redirect() && follow(end)) continue;  // at once, and not a failure
            // After shutdown{not_leader}, a lost stream or a redirect not
            // followed: from its own target again, which may list every
            // replica (docs/remote.md, Redirects).
            go_home();
            if (end.not_leader) {
                backoff = options_.initial_backoff;
                continue;  // the leader moved: reconnect at once
            }
            if (co_await pause(backoff)) break;
            backoff = backoff >= options_.max_backoff / 2 ? options_.max_backoff : backoff * 2;
        }
        // Handlers of lost streams were cancelled; run() returns after them.
        while (handlers_alive_ > 0) {
            auto event = co_await inbox_->next(Clock::time_point::max());
            if (event && std::holds_alternative<HandlerDone>(*event)) --handlers_alive_;
        }
        if (refused) throw RemoteWorkerError(refused->code, refused->message);
    }

    /// Points the next stream at the redirect's endpoint; false (and a line
    /// in the log) when the redirect is not followed.
    bool follow(const StreamEnd& end) {
        auto next = chain_.next(at_, end.endpoint);
        if (auto* to = std::get_if<ParsedTarget>(&next)) {
            logger()->info("cronoq worker \"{}\" (pool \"{}\"): shard \"{}\" is led at {}: following the redirect",
                           options_.name, options_.pool, *end.shard, *end.endpoint);
            at_ = std::move(*to);
            channel_ = make_channel(at_, options_.tls);
            return true;
        }
        const auto& declined = std::get<RedirectChain::Declined>(next);
        if (declined.warn)
            logger()->warn("cronoq worker \"{}\" (pool \"{}\"): {}; retrying its own target {} with backoff",
                           options_.name, options_.pool, declined.why, options_.target);
        else
            logger()->debug("cronoq worker \"{}\" (pool \"{}\"): {}; retrying its own target {} with backoff",
                            options_.name, options_.pool, declined.why, options_.target);
        return false;
    }

    void go_home() {
        chain_.reset();
        if (channel_ == home_channel_) return;
        at_ = home_;
        channel_ = home_channel_;
    }

    /// Waits `delay`; true when stop() came first.
    asio::awaitable<bool> pause(std::chrono::nanoseconds delay) {
        const auto until = after(Clock::now(), delay);
        for (;;) {
            auto event = co_await inbox_->next(until);
            if (!event) co_return false;
            if (std::holds_alternative<StopRequested>(*event)) co_return true;
            if (std::holds_alternative<HandlerDone>(*event)) --handlers_alive_;
        }
    }

    /// What one stream keeps between events.
    struct StreamState {
        std::uint64_t connection = 0;
        StreamEnd end;
        std::chrono::nanoseconds ttl = std::chrono::seconds(30);
        Clock::time_point next_heartbeat = Clock::time_point::max();
        Clock::time_point drain_deadline = Clock::time_point::max();
        bool stopping = false;
    };

    /// One stream, from register to its end.
    asio::awaitable<StreamEnd> serve_stream() {
        const std::uint64_t connection = ++connection_;
        StreamState s;
        s.connection = connection;
        {
            RegisterMessage message{WorkerRegistration{options_.pool, options_.slots, options_.name, options_.labels}};
            stream_ = ClientStream::open(channel_, options_.token, std::move(message), [inbox = inbox_, connection](ServerEvent e) {
                inbox->push(FromStream{connection, std::move(e)});
            });
        }
        for (;;) {
            auto event = co_await inbox_->next(std::min(s.next_heartbeat, s.drain_deadline));
            const auto now = Clock::now();
            if (!event) {
                on_stream_timer(s, now);
                continue;
            }
            if (auto* done = std::get_if<HandlerDone>(&*event)) {
                --handlers_alive_;
                if (done->connection == connection && running_.erase(done->lease) > 0) {
                    stream_->send(report_of(done->lease, std::move(done->outcome)));
                    close_if_drained(s);
                }
            } else if (auto* beat = std::get_if<HeartbeatWanted>(&*event)) {
                if (beat->connection == connection && running_.count(beat->lease))
                    stream_->send(RemoteReport{beat->lease, RemoteReport::Heartbeat{}});
            } else if (std::holds_alternative<StopRequested>(*event)) {
                s.stopping = true;
                if (s.end.registered) stream_->send(WorkerSlots{0});
                s.drain_deadline = after(now, options_.drain_timeout);
                close_if_drained(s);
            } else if (auto* from = std::get_if<FromStream>(&*event); from && from->connection == connection) {
                if (on_server_event(s, from->event, now)) co_return s.end;
            }
        }
    }

    void close_if_drained(const StreamState& s) {
        if (s.stopping && running_.empty()) stream_->close();
    }

    /// No event before the earlier of the drain deadline and the next heartbeat.
    void on_stream_timer(StreamState& s, Clock::time_point now) {
        if (now >= s.drain_deadline) {
            // The drain ran out: cancel the rest; closing the stream
            // fails their leases as retryable on the server.
            cancel_running();
            stream_->close();
            s.drain_deadline = Clock::time_point::max();
        }
        if (now >= s.next_heartbeat) {
            for (const auto& [lease, state] : running_) stream_->send(RemoteReport{lease, RemoteReport::Heartbeat{}});
            s.next_heartbeat = after(now, s.ttl / 3);
        }
    }

    /// What the server sent on this stream; true when the stream closed.
    bool on_server_event(StreamState& s, ServerEvent& e, Clock::time_point now) {
        if (auto* reg = std::get_if<WorkerRegistered>(&e)) {
            s.end.registered = true;
            s.ttl = std::max(reg->lease_ttl, std::chrono::nanoseconds(std::chrono::milliseconds(3)));
            granted_ = reg->slots;
            s.next_heartbeat = after(now, s.ttl / 3);
        } else if (auto* lease = std::get_if<RemoteLeaseOut>(&e)) {
            if (s.stopping || running_.size() >= granted_.load(std::memory_order_relaxed)) {
                // More than granted (or after stop()): give it back unrun.
                stream_->send(RemoteReport{lease->lease, RemoteReport::Nack{
                    s.stopping ? "the worker is stopping" : "the worker runs all its granted slots"}});
            } else {
                start_handler(std::move(*lease), s.connection, s.ttl);
            }
        } else if (auto* abort = std::get_if<WorkerAbort>(&e)) {
            if (auto it = running_.find(abort->lease); it != running_.end()) {
                auto state = std::move(it->second);
                running_.erase(it);  // its slot is free at once; its outcome is dropped
                state->cancel.cancel();
                close_if_drained(s);
            }
        } else if (auto* shutdown = std::get_if<WorkerShutdown>(&e)) {
            s.end.not_leader = shutdown->not_leader;  // the server ends the stream next
        } else if (auto* slots = std::get_if<WorkerSlots>(&e)) {
            granted_ = slots->slots;
        } else if (auto* closed = std::get_if<StreamClosed>(&e)) {
            cancel_running();  // the server failed their leases
            granted_ = 0;
            stream_.reset();
            s.end.code = closed->code;
            s.end.message = closed->message;
            s.end.shard = std::move(closed->shard);
            s.end.endpoint = std::move(closed->shard_endpoint);
            return true;
        }
        return false;
    }

    void start_handler(RemoteLeaseOut lease, std::uint64_t connection, std::chrono::nanoseconds ttl) {
        auto state = std::make_shared<RemoteLeaseState>();
        state->key = lease.key.empty() ? std::nullopt : std::optional<std::string>(lease.key);
        state->lease = std::move(lease);
        state->lease_ttl = ttl;
        state->connection = connection;
        state->core = std::static_pointer_cast<RemoteWorkerCore>(shared_from_this());
        running_.emplace(state->lease.lease, state);
        ++handlers_alive_;
        asio::co_spawn(handler_executor_, run_handler(shared_from_this(), std::move(state)), asio::detached);
    }

    static asio::awaitable<void> run_handler(std::shared_ptr<Worker> self, std::shared_ptr<RemoteLeaseState> state) {
        RemoteOutcome outcome = RemoteReport::Cancelled{};
        std::string panic;
        try {
            auto work = self->handler_(state);
            outcome = co_await std::move(work);
        } catch (const std::exception& e) {
            panic = e.what();
        } catch (...) {
            panic = "unknown exception";
        }
        if (!panic.empty()) outcome = RemoteReport::Fail{"panic: " + panic, false, std::nullopt};
        self->inbox_->push(HandlerDone{state->connection, state->lease.lease, std::move(outcome)});
    }

    void cancel_running() {
        auto running = std::move(running_);
        running_.clear();
        for (auto& [lease, state] : running) state->cancel.cancel();
    }

    const RemoteWorkerOptions options_;
    const Handler handler_;
    const ParsedTarget home_;  // options_.target
    const std::shared_ptr<WorkerChannel> home_channel_;
    std::atomic<std::size_t> granted_{0};

    const std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();

    // On the strand only.
    asio::any_io_executor handler_executor_;
    std::uint64_t connection_ = 0;
    RedirectChain chain_;
    ParsedTarget at_;                         // where the current stream goes: home_ or a redirect's endpoint
    std::shared_ptr<WorkerChannel> channel_;  // to at_
    std::shared_ptr<ClientStream> stream_;
    std::unordered_map<LeaseId, std::shared_ptr<RemoteLeaseState>> running_;
    std::size_t handlers_alive_ = 0;  // spawned handlers not yet done, of any stream
};

}  // namespace

std::shared_ptr<RemoteWorkerCore> RemoteWorkerCore::create(RemoteWorkerOptions options, Handler handler) {
    constexpr auto invalid = RemoteWorkerError::Code::InvalidArgument;
    if (options.pool.empty()) throw RemoteWorkerError(invalid, "cronoq: RemoteWorkerOptions::pool is empty");
    if (options.slots == 0) throw RemoteWorkerError(invalid, "cronoq: RemoteWorkerOptions::slots must be at least 1");
    if (options.initial_backoff <= std::chrono::nanoseconds::zero() || options.max_backoff < options.initial_backoff)
        throw RemoteWorkerError(invalid, "cronoq: RemoteWorkerOptions: need 0 < initial_backoff <= max_backoff");
    if (!handler) throw RemoteWorkerError(invalid, "cronoq: RemoteWorker: no handler");
    return std::make_shared<Worker>(std::move(options), std::move(handler));
}

}  // namespace cronoq::detail
