#pragma once
// BlockingScheduler: a synchronous facade for code without an event loop.
#include <cronoq/config_error.hpp>
#include <cronoq/detail/builder_base.hpp>
#include <cronoq/duration.hpp>
#include <cronoq/scheduler.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace cronoq {

/// A handle whose waits block the calling thread. Never call `get` from a
/// thread that runs the scheduler's io_context: it would wait on itself.
template <class O>
class BlockingHandle {
public:
    TaskId id() const { return handle_.id(); }
    TaskStatus status() const { return handle_.status(); }
    bool cancel() { return handle_.cancel(); }
    /// Blocks until the task ends; its output, or throws TaskFailure.
    std::shared_ptr<const O> get() {
        return std::static_pointer_cast<const O>(*detail::HandleState::wait_blocking(detail::Access::state(handle_), std::nullopt));
    }
    /// As `get`, but empty if the task has not ended within `d` (any
    /// `std::chrono::duration`, saturated into nanoseconds: a wait too long
    /// to express on `steady_clock` waits until the task ends).
    template <class Rep, class Period>
    std::optional<std::shared_ptr<const O>> get_for(std::chrono::duration<Rep, Period> d) {
        auto out = detail::HandleState::wait_blocking(detail::Access::state(handle_), saturating_ns(d));
        if (!out) return std::nullopt;
        return std::static_pointer_cast<const O>(*out);
    }
    /// The same task's awaitable handle, for code that runs on an io_context.
    const TaskHandle<O>& handle() const { return handle_; }

private:
    friend struct detail::Access;
    explicit BlockingHandle(TaskHandle<O> handle) : handle_(std::move(handle)) {}

    TaskHandle<O> handle_;
};

/// Owns an io_context and its threads (default 1) and a Scheduler on it.
/// Destroying it shuts down with zero grace and joins the threads.
template <class P, class O>
class BlockingScheduler {
public:
    class Builder : public detail::BuilderBase<Builder, P, O> {
    public:
        /// Threads running the io_context (default 1; 1 to 1024, checked by
        /// `build`).
        Builder& threads(std::size_t n) { threads_ = n; return *this; }
        /// Throws ConfigError naming the field, also when the threads cannot
        /// be started (a process limit); nothing is left running then.
        BlockingScheduler build() const {
            check_threads();
            auto io = std::make_unique<asio::io_context>();
            auto core = this->build_core(io->get_executor());
            return BlockingScheduler(std::move(io), std::move(core), threads_);
        }

        /// As `Scheduler::Builder::open`, blocking until this process
        /// leads and has recovered. Throws ConfigError without a store and
        /// StoreError when the lead ends before it began.
        template <class P2 = P>
        BlockingScheduler open() const {
            check_threads();
            auto io = std::make_unique<asio::io_context>();
            auto core = this->template build_durable_core<P2>(io->get_executor());
            // The facade holds the only reference to the core: when open
            // throws, the core goes before the io_context its strands
            // belong to (a local copy would outlive it).
            auto opening = core->open();
            BlockingScheduler scheduler(std::move(io), std::move(core), threads_);
            auto opened = asio::co_spawn(*scheduler.state_->io, std::move(opening), asio::use_future);
            opened.get();
            scheduler.state_->durable = true;
            return scheduler;
        }

    private:
        void check_threads() const {
            if (threads_ == 0 || threads_ > detail::max_threads)
                throw ConfigError("threads: must be between 1 and " + std::to_string(detail::max_threads) + " (got " +
                                  std::to_string(threads_) + ")");
        }
        std::size_t threads_ = 1;
    };

    static Builder builder() { return Builder{}; }

    BlockingScheduler(BlockingScheduler&&) noexcept = default;
    BlockingScheduler& operator=(BlockingScheduler&&) noexcept = default;
    ~BlockingScheduler() {
        if (!state_) return;
        shutdown(std::chrono::nanoseconds(0));
    }

    /// Submits; throws SubmitException on an error. Blocks only when the
    /// pool is full under `OverflowPolicy::Wait`, until there is room, and
    /// with a store until the task is committed (never call it then from a
    /// thread of the scheduler's io_context).
    BlockingHandle<O> submit(Task<P> task) {
        if (!state_->durable) {
            auto r = state_->scheduler.try_submit(task);
            if (r || r.error() != SubmitError::Full) return detail::Access::make<BlockingHandle<O>>(std::move(r).value());
        }
        auto admitted = asio::co_spawn(*state_->io, state_->scheduler.submit(std::move(task)), asio::use_future);
        return detail::Access::make<BlockingHandle<O>>(admitted.get());
    }
    SubmitResult<BlockingHandle<O>> try_submit(Task<P> task) {
        auto r = state_->scheduler.try_submit(std::move(task));
        if (!r) return {r.error(), r.message()};
        return detail::Access::make<BlockingHandle<O>>(std::move(r).value());
    }
    /// Each admitted or rejected on its own, in one engine step, as
    /// `Scheduler::try_submit_many`.
    std::vector<SubmitResult<BlockingHandle<O>>> try_submit_many(std::vector<Task<P>> tasks) {
        auto results = state_->scheduler.try_submit_many(std::move(tasks));
        std::vector<SubmitResult<BlockingHandle<O>>> out;
        out.reserve(results.size());
        for (auto& r : results) {
            if (r)
                out.emplace_back(detail::Access::make<BlockingHandle<O>>(std::move(r).value()));
            else
                out.emplace_back(r.error(), r.message());
        }
        return out;
    }
    /// All or nothing, as `Scheduler::try_submit_batch`; `submit_batch`
    /// throws SubmitException instead.
    SubmitResult<std::vector<BlockingHandle<O>>> try_submit_batch(std::vector<Task<P>> tasks) {
        auto r = state_->scheduler.try_submit_batch(std::move(tasks));
        if (!r) return {r.error(), r.message()};
        std::vector<BlockingHandle<O>> out;
        out.reserve(r.value().size());
        for (auto& h : r.value()) out.push_back(detail::Access::make<BlockingHandle<O>>(std::move(h)));
        return out;
    }
    std::vector<BlockingHandle<O>> submit_batch(std::vector<Task<P>> tasks) {
        return try_submit_batch(std::move(tasks)).value();
    }
    /// As `Scheduler::add_recurring` / `remove_recurring`.
    void add_recurring(Recurring<P> schedule) { state_->scheduler.add_recurring(std::move(schedule)); }
    bool remove_recurring(std::string_view name) { return state_->scheduler.remove_recurring(name); }
    void set_rate(std::string_view bucket, double rate_per_s) { state_->scheduler.set_rate(bucket, rate_per_s); }
    /// As `Scheduler::set_fair_weight`.
    void set_fair_weight(std::string_view pool, std::string_view key, double weight) {
        state_->scheduler.set_fair_weight(pool, key, weight);
    }
    bool cancel(TaskRef ref) { return state_->scheduler.cancel(std::move(ref)); }
    std::optional<TaskStatus> status(TaskRef ref) const { return state_->scheduler.status(std::move(ref)); }
    /// As `Scheduler::query`.
    TaskPage query(const TaskQuery& q) const { return state_->scheduler.query(q); }
    /// As `Scheduler::snapshot`.
    Snapshot snapshot() const { return state_->scheduler.snapshot(); }
    /// As `Scheduler::pause` / `resume`.
    bool pause(std::string_view pool) { return state_->scheduler.pause(pool); }
    bool resume(std::string_view pool) { return state_->scheduler.resume(pool); }
    /// As `Scheduler::find`.
    std::optional<BlockingHandle<O>> find(TaskRef ref) const {
        auto h = state_->scheduler.find(std::move(ref));
        if (!h) return std::nullopt;
        return detail::Access::make<BlockingHandle<O>>(std::move(*h));
    }
    /// As `Scheduler::retry`.
    std::optional<BlockingHandle<O>> retry(TaskRef ref) {
        auto h = state_->scheduler.retry(std::move(ref));
        if (!h) return std::nullopt;
        return detail::Access::make<BlockingHandle<O>>(std::move(*h));
    }
    EventStream subscribe() { return state_->scheduler.subscribe(); }
    /// As `Scheduler::flush`, blocking. Never call it from a thread of the
    /// scheduler's io_context.
    void flush() {
        auto done = asio::co_spawn(*state_->io, state_->scheduler.flush(), asio::use_future);
        done.get();
    }
    const Scheduler<P, O>& scheduler() const { return state_->scheduler; }

    /// As `Scheduler::shutdown`, blocking; then stops and joins the threads.
    /// Safe from any number of threads at once (each returns once the first
    /// has finished) and idempotent. Never call it from an executor of this
    /// scheduler: it would wait for its own thread. An attempt that ignores
    /// cancellation is abandoned (see `Scheduler::shutdown`) and then
    /// destroyed with the io_context, at its next suspension; one that
    /// never suspends keeps its thread, and this call, waiting.
    template <class Rep, class Period>
    void shutdown(std::chrono::duration<Rep, Period> grace) {
        std::lock_guard lock(state_->shutdown_mu);
        if (state_->threads.empty()) return;
        auto done = asio::co_spawn(*state_->io, state_->scheduler.shutdown(saturating_ns(grace)), asio::use_future);
        done.get();
        state_->stop_threads();
    }

private:
    struct State {
        State(std::unique_ptr<asio::io_context> i, Scheduler<P, O> s)
            : io(std::move(i)), scheduler(std::move(s)), guard(asio::make_work_guard(*io)) {}
        std::unique_ptr<asio::io_context> io;
        Scheduler<P, O> scheduler;
        asio::executor_work_guard<asio::io_context::executor_type> guard;
        std::mutex shutdown_mu;  // serializes shutdown, from any thread and the destructor
        std::vector<std::thread> threads;
        bool durable = false;  // opened on a store: a submission waits for its commit

        // After the scheduler's shutdown only abandoned attempts can be left
        // on the io_context: stop it rather than wait for them.
        void stop_threads() {
            guard.reset();
            io->stop();
            for (auto& t : threads) t.join();
            threads.clear();
        }
    };

    BlockingScheduler(std::unique_ptr<asio::io_context> io, std::shared_ptr<detail::SchedulerCore> core, std::size_t threads)
        : state_(std::make_unique<State>(std::move(io), detail::Access::make<Scheduler<P, O>>(std::move(core)))) {
        try {
            state_->threads.reserve(threads);
            for (std::size_t i = 0; i < threads; ++i) state_->threads.emplace_back([io = state_->io.get()] { io->run(); });
        } catch (const std::system_error& e) {
            const std::size_t started = state_->threads.size();
            state_->stop_threads();
            throw ConfigError("threads: could start only " + std::to_string(started) + " of " + std::to_string(threads) +
                              " io_context threads: " + e.what());
        }
    }

    std::unique_ptr<State> state_;
};

}  // namespace cronoq
