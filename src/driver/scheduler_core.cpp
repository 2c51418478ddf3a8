// The driver core: the engine behind a mutex, attempts as coroutines.
//
// Every entry point takes the mutex, calls the engine with the clock's now,
// and applies the actions it emitted before releasing it, so actions are
// applied in the engine's order. Nothing done under the mutex runs user
// code: attempts are spawned (co_spawn only posts), aborts are posted to the
// attempt's strand, and waiters are completed by posting.
#include <cronoq/config_error.hpp>
#include <cronoq/cron_expr.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/snapshot.hpp>

#include "attempt_state.hpp"
#include "blocking_pool.hpp"
#include "event_queue.hpp"
#include "recurring.hpp"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>
#include <asio/strand.hpp>
#include <asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace cronoq::detail {

namespace {

struct PoolRuntime {
    PoolDefinition def;
    asio::any_io_executor executor;  // where attempts run
    // Shared with every task's info, so that a TaskContext outliving the
    // scheduler still knows its pool's name.
    std::shared_ptr<const std::string> name = std::make_shared<const std::string>(def.engine.name);
    // Submitters waiting for room under OverflowPolicy::Wait, in order; the
    // head is woken when the engine announces space.
    std::deque<std::shared_ptr<WaitList>> waiting_submits;
};

struct TaskRecord {
    std::shared_ptr<const TaskInfo> info;
    std::shared_ptr<HandleState> handle;
    std::shared_ptr<const void> output;  // of the attempt being reported
};

// Links every attempt whose coroutine has not returned (guarded by the
// core's mutex), so that shutdown can name and abandon the deaf ones.
struct RunningLink {
    RunningLink* prev = this;
    RunningLink* next = this;
};

struct Attempt : RunningLink {
    Attempt(std::shared_ptr<AttemptState> s, asio::strand<asio::any_io_executor> st, const PoolRuntime* p)
        : state(std::move(s)), strand(std::move(st)), pool(p) {}
    std::shared_ptr<AttemptState> state;
    asio::strand<asio::any_io_executor> strand;
    asio::cancellation_signal signal;
    const PoolRuntime* pool;
    bool running = false;  // linked; false once returned or abandoned
};

// Runs one step of the abort sequence; what it throws is logged and the
// sequence goes on (SPEC §4: exceptions are contained).
template <class F>
void contained(const char* step, const Attempt& a, F&& f) noexcept {
    try {
        f();
    } catch (const std::exception& e) {
        logger()->warn("task {} lease {}: {} threw: {}", a.state->task->id.value, a.state->lease.value, step, e.what());
    } catch (...) {
        logger()->warn("task {} lease {}: {} threw a non-standard exception", a.state->task->id.value,
                       a.state->lease.value, step);
    }
}

std::string pool_field(const PoolDefinition& d, const char* field) {
    return "pool \"" + d.engine.name + "\": " + field;
}

void validate(const PoolDefinition& d) {
    if (d.max_workers == 0) throw ConfigError(pool_field(d, "workers: max must be at least 1"));
    if (d.min_workers > d.max_workers)
        throw ConfigError(pool_field(d, "workers: min (") + std::to_string(d.min_workers) + ") > max (" +
                          std::to_string(d.max_workers) + ")");
    if (d.engine.capacity < d.min_workers || d.engine.capacity > d.max_workers)
        throw ConfigError(pool_field(d, "workers: initial (") + std::to_string(d.engine.capacity) +
                          ") outside [min, max]");
    if (!d.executor.run) throw ConfigError(pool_field(d, "no executor (call executor_fn or executor)"));
    // Only an autoscaler can raise a local pool's capacity above its initial
    // value: without one, an initial 0 would queue tasks forever.
    if (d.engine.capacity == 0 && !d.engine.autoscale)
        throw ConfigError(pool_field(d, "workers: initial is 0 and no autoscaler can raise it (set autoscale or initial >= 1)"));
}

// The engine's mutex, counting its acquisitions: a figure of the driver's
// cost per task that, unlike time, no noise can move.
class EngineMutex {
public:
    void lock() {
        mu_.lock();
        ++acquisitions_;
    }
    void unlock() { mu_.unlock(); }
    std::uint64_t acquisitions() const { return acquisitions_; }  // with the lock held

private:
    std::mutex mu_;
    std::uint64_t acquisitions_ = 0;
};

}  // namespace

struct SchedulerCore::State {
    asio::any_io_executor executor;
    SchedulerOptions options;
    std::shared_ptr<Clock> clock;
    std::unique_ptr<Clock::Timer> timer;
    std::weak_ptr<SchedulerCore> self;

    mutable EngineMutex mu;
    core::Engine engine;
    std::vector<PoolRuntime> pools;
    std::unordered_map<TaskId, TaskRecord> tasks;
    std::unordered_map<LeaseId, std::shared_ptr<Attempt>> attempts;
    std::vector<core::Action> actions;
    std::optional<core::Time> armed;
    std::size_t coroutines = 0;  // attempt coroutines that have not returned (or were abandoned)
    RunningLink running_attempts;  // the list of those coroutines
    bool shutting_down = false;
    bool finished = false;  // shutdown completed: no timer may be armed again
    std::shared_ptr<WaitList> drained = WaitList::create();
    std::vector<std::weak_ptr<EventQueue>> subscribers;
    std::unique_ptr<BlockingPool> blocking;
    std::map<std::string, Schedule, std::less<>> schedules;
    std::unique_ptr<Clock::Timer> recurring_timer;  // at the earliest next occurrence
    std::unique_ptr<Clock::Timer> abandon_timer;    // shutdown's limit on deaf attempts
    bool abandon_armed = false;

    State(asio::any_io_executor ex, SchedulerOptions opts)
        : executor(std::move(ex)),
          options(std::move(opts)),
          engine(options.engine) {
        clock = options.clock ? options.clock : Clock::steady();
    }

    void link_running(Attempt& a) {
        a.prev = running_attempts.prev;
        a.next = &running_attempts;
        a.prev->next = &a;
        running_attempts.prev = &a;
        a.running = true;
        ++coroutines;
    }

    // False if it was not linked (it had already been abandoned).
    bool unlink_running(Attempt& a) {
        if (!a.running) return false;
        a.prev->next = a.next;
        a.next->prev = a.prev;
        a.prev = a.next = &a;
        a.running = false;
        --coroutines;
        return true;
    }

    // ---- applying engine actions (mutex held) ---------------------------------
    void apply(core::Time now) {
        engine.drain(actions);
        if (actions.empty()) return rearm();
        // Wall time only stamps events: read that clock only for subscribers.
        const auto wall = subscribers.empty() ? std::chrono::system_clock::time_point{} : clock->system_now();
        for (core::Action& action : actions) {
            std::visit([&](auto& a) { on(a, now, wall); }, action);
        }
        rearm();
        check_drained();
    }

    void on(core::Dispatch& d, core::Time, std::chrono::system_clock::time_point) {
        auto rec = tasks.find(d.task);
        if (rec == tasks.end()) return;
        const PoolRuntime& pool = pools[d.pool];
        auto state = std::make_shared<AttemptState>();
        state->task = rec->second.info;
        state->lease = d.lease;
        state->attempt = d.attempt;
        state->needs_heartbeat = pool.def.engine.lease_ttl.has_value();
        state->core = self;
        auto attempt = std::make_shared<Attempt>(std::move(state), asio::make_strand(pool.executor), &pool);
        attempts.emplace(d.lease, attempt);
        link_running(*attempt);
        // co_spawn dispatches: it could run the attempt inline, under our
        // mutex. Posting the launch keeps user code out of it.
        asio::post(attempt->strand, [core = self.lock(), attempt] {
            asio::co_spawn(attempt->strand, run_attempt(core, attempt),
                           asio::bind_cancellation_slot(attempt->signal.slot(), [core, attempt](std::exception_ptr) {
                               core->s_->attempt_exited(*attempt);
                           }));
        });
    }

    void on(core::Abort& a, core::Time, std::chrono::system_clock::time_point) {
        auto it = attempts.find(a.lease);
        if (it == attempts.end()) return;
        auto attempt = std::move(it->second);
        attempts.erase(it);
        logger()->debug("task {} lease {}: aborting attempt ({})", a.task.value, a.lease.value, core::to_string(a.reason));
        // On the attempt's strand, in the order of SPEC §4: the executor's
        // abort, then the context, then Asio cancellation of the coroutine.
        // Each step is contained, so a throwing abort or on_cancel callback
        // neither escapes the application's run() nor skips the later steps.
        // The core is held: the coroutine may have returned meanwhile.
        asio::post(attempt->strand, [core = self.lock(), attempt, lease = a.lease] {
            if (const auto& abort = attempt->pool->def.executor.abort)
                contained("the executor's abort", *attempt, [&] { abort(lease); });
            attempt->state->cancel.cancel();  // contains its callbacks
            contained("cancellation of the coroutine", *attempt,
                      [&] { attempt->signal.emit(asio::cancellation_type::terminal); });
        });
    }

    void on(core::Status& s, core::Time now, std::chrono::system_clock::time_point wall) {
        auto it = tasks.find(s.task);
        if (it == tasks.end()) return;
        TaskRecord& rec = it->second;
        rec.handle->set_status(s.status);
        publish(rec, s, wall + (s.at - now));
        if (!is_terminal(s.status)) return;
        if (s.status == TaskStatus::Failed || s.status == TaskStatus::DeadLettered)
            logger()->info("task {} {} after {} attempt(s): {}", s.task.value, to_string(s.status), s.attempt, s.message);
        rec.handle->finish(s.status, s.attempt, s.message, s.status == TaskStatus::Succeeded ? rec.output : nullptr);
        // A keyed task's record stays while the engine retains the task, so
        // that a resubmitted key gets a handle to its outcome (until Forget).
        if (!rec.info->key) tasks.erase(it);
    }

    void on(core::Forget& f, core::Time, std::chrono::system_clock::time_point) { tasks.erase(f.task); }

    std::optional<TaskId> resolve(const TaskRef& ref) const {
        if (ref.id) return ref.id;
        return ref.key ? engine.find_key(*ref.key) : std::nullopt;
    }

    void on(core::ScaleTo& s, core::Time, std::chrono::system_clock::time_point) {
        logger()->debug("pool \"{}\": capacity {}", pools[s.pool].def.engine.name, s.capacity);
    }

    void on(core::SpaceAvailable& s, core::Time, std::chrono::system_clock::time_point) { wake_next_submit(pools[s.pool]); }

    void wake_next_submit(PoolRuntime& pool) {
        if (pool.waiting_submits.empty()) return;
        auto next = std::move(pool.waiting_submits.front());
        pool.waiting_submits.pop_front();
        next->set();  // posts the waiter's resumption
    }

    void publish(const TaskRecord& rec, const core::Status& s, std::chrono::system_clock::time_point at) {
        if (subscribers.empty()) return;
        StatusEvent e{s.task, rec.info->key, *rec.info->pool, rec.info->kind, s.status, s.attempt, at, s.message};
        std::erase_if(subscribers, [&](const std::weak_ptr<EventQueue>& w) {
            auto q = w.lock();
            if (q) q->push(e);
            return !q;
        });
    }

    // ---- submission (mutex held) ---------------------------------------------
    using Failure = std::pair<SubmitError, std::string>;

    // The engine's view of a request; wall time maps the time points.
    std::optional<Failure> to_spec(const TaskRequest& r, core::Time now, std::chrono::system_clock::time_point wall,
                                   core::TaskSpec& spec) {
        if (r.pool) {
            auto id = engine.find_pool(*r.pool);
            if (!id) return Failure{SubmitError::UnknownPool, "no pool named \"" + *r.pool + "\""};
            spec.pool = *id;
        }
        const auto engine_time = [&](std::chrono::system_clock::time_point t) {
            // Saturating: a time point centuries away stays far away.
            const auto since = [](std::chrono::system_clock::time_point p) {
                return std::chrono::duration_cast<core::Duration>(p.time_since_epoch()).count();
            };
            return core::add_saturated(now, core::Duration(core::sub_saturated(since(t), since(wall))));
        };
        spec.priority = r.priority;
        spec.kind = engine.intern_kind(r.kind);
        if (r.deadline_at) spec.deadline = engine_time(*r.deadline_at);
        if (r.deadline_in) spec.deadline = core::add_saturated(now, *r.deadline_in);
        if (r.start_at) spec.start = engine_time(*r.start_at);
        if (r.start_in) spec.start = core::add_saturated(now, *r.start_in);
        spec.start_tolerance = r.start_tolerance;
        spec.on_miss = r.on_miss;
        spec.depends_on = r.depends_on;
        spec.resources = r.resources;
        spec.duration_hint = r.duration_hint;
        spec.timeout = r.timeout;
        spec.retry = r.retry;
        spec.key = r.key;
        return std::nullopt;
    }

    static bool needs_wall(const TaskRequest& r) { return r.deadline_at || r.deadline_in || r.start_at; }

    // The handle of `id`: the record of a task the engine just admitted, or
    // the existing one of the task holding the key.
    std::shared_ptr<HandleState> record(TaskId id, core::PoolId pool_id, TaskRequest&& r,
                                        std::chrono::system_clock::time_point wall) {
        if (auto held = tasks.find(id); held != tasks.end()) return held->second.handle;
        const PoolRuntime& pool = pools[pool_id];
        auto info = std::make_shared<TaskInfo>();
        info->id = id;
        info->pool = pool.name;
        info->kind = std::move(r.kind);
        info->key = std::move(r.key);
        if (!r.traceparent)
            for (const auto& [k, v] : r.tags)
                if (k == "traceparent") r.traceparent = v;
        info->tags = std::move(r.tags);
        if (r.deadline_at) info->deadline = r.deadline_at;
        if (r.deadline_in)
            info->deadline = std::chrono::system_clock::time_point(
                std::chrono::duration_cast<std::chrono::system_clock::duration>(core::Duration(core::add_saturated(
                    std::chrono::duration_cast<core::Duration>(wall.time_since_epoch()).count(), r.deadline_in->count()))));
        info->timeout = r.timeout ? r.timeout : pool.def.engine.default_timeout;
        info->traceparent = std::move(r.traceparent);
        info->payload = std::move(r.payload);
        auto handle = std::make_shared<HandleState>(id, self);
        tasks.emplace(id, TaskRecord{std::move(info), handle, nullptr});
        return handle;
    }

    // Consumes `r` only when it is admitted, so that a waiting submitter can
    // try again with it.
    SubmitResult<std::shared_ptr<HandleState>> submit_one(TaskRequest& r) {
        if (shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
        const auto now = clock->now();
        // Wall time matters only to map time points: read it only then.
        const auto wall = needs_wall(r) ? clock->system_now() : std::chrono::system_clock::time_point{};
        core::TaskSpec spec;
        if (auto failure = to_spec(r, now, wall, spec)) return {failure->first, std::move(failure->second)};
        auto id = engine.submit(spec, now);
        if (!id) return {id.error(), id.message()};
        auto handle = record(id.value(), spec.pool, std::move(r), wall);
        apply(now);
        return handle;
    }

    // ---- recurring schedules (mutex held) ---------------------------------------
    void on_recurring_due() {
        if (shutting_down) return;
        const auto now = clock->now();
        const auto wall = clock->system_now();
        for (auto& [name, s] : schedules) {
            follow_wall_clock(s, wall, now);
            if (s.next > wall) continue;
            const auto at = take_due(s, wall);
            const std::optional<TaskStatus> previous = s.last ? engine.status(*s.last) : std::nullopt;
            auto request = occurrence(s, at, previous);
            if (!request) {
                logger()->debug("recurring \"{}\": no occurrence at {} (overlap policy)", name, utc_rfc3339(at));
                continue;
            }
            auto handle = submit_one(*request);
            if (handle)
                s.last = handle.value()->id();
            else
                logger()->warn("recurring \"{}\": occurrence at {} not submitted: {}", name, utc_rfc3339(at),
                               handle.message());
        }
        rearm_recurring();
    }

    void rearm_recurring() {
        if (finished) return;
        const auto now = clock->now();
        const auto wall = clock->system_now();
        auto earliest = std::chrono::system_clock::time_point::max();
        for (auto& [name, s] : schedules) {
            follow_wall_clock(s, wall, now);
            earliest = std::min(earliest, s.next);
        }
        if (shutting_down || earliest == std::chrono::system_clock::time_point::max()) return recurring_timer->disarm();
        const auto at = earliest <= wall ? now
                                         : now + std::min<core::Duration>(
                                                     std::chrono::duration_cast<core::Duration>(earliest - wall),
                                                     wall_check_interval);
        recurring_timer->arm(at, [w = self] {
            if (auto core = w.lock()) {
                std::lock_guard lock(core->s_->mu);
                core->s_->on_recurring_due();
            }
        });
    }

    // ---- timing (mutex held) -------------------------------------------------
    void rearm() {
        if (finished) return;
        const auto next = engine.next_wakeup();
        if (next == armed) return;
        armed = next;
        if (!next) return timer->disarm();
        timer->arm(*next, [w = self] {
            if (auto core = w.lock()) core->s_->on_wakeup();
        });
    }

    void on_wakeup() {
        std::lock_guard lock(mu);
        armed.reset();
        const auto now = clock->now();
        engine.tick(now);
        apply(now);
    }

    // ---- attempts ------------------------------------------------------------
    static asio::awaitable<void> run_attempt(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> a) {
        AttemptOutput out;
        try {
            // Not one expression: GCC 12 destroys by-value temporaries of a
            // co_await full-expression twice.
            auto attempt = a->pool->def.executor.run(TaskContext(a->state), a->state->task->payload);
            out = co_await std::move(attempt);
        } catch (const TaskError& e) {
            out.error = e;
        } catch (const std::exception& e) {
            out.error = TaskError::permanent(std::string("panic: ") + e.what());
        } catch (...) {
            out.error = TaskError::permanent("panic: unknown exception");
        }
        core->s_->report(*a, std::move(out));
    }

    void report(const Attempt& a, AttemptOutput out) {
        const TaskId id = a.state->task->id;
        {
            std::lock_guard lock(mu);
            // Not live: the engine abandoned the attempt, and what it threw
            // on the way out (operation_aborted) is expected, not a panic.
            const bool live = attempts.erase(a.state->lease) > 0;
            auto rec = tasks.find(id);
            if (rec != tasks.end()) rec->second.output = std::move(out.value);
            core::Outcome outcome;
            if (out.error) {
                const TaskError& e = *out.error;
                switch (e.kind()) {
                    case TaskError::Kind::Retryable: outcome = core::Outcome::retryable(e.message(), e.retry_after()); break;
                    case TaskError::Kind::Permanent: outcome = core::Outcome::permanent(e.message()); break;
                    case TaskError::Kind::Cancelled: outcome = core::Outcome::cancelled(e.message()); break;
                }
                if (live && e.message().rfind("panic: ", 0) == 0)
                    logger()->warn("task {} attempt {}: executor {}", id.value, a.state->attempt, e.message());
            }
            const auto now = clock->now();
            if (!engine.complete(a.state->lease, outcome, now))
                logger()->debug("task {} lease {}: late report ignored", id.value, a.state->lease.value);
            apply(now);
            // A late or retried report leaves the task live (or a keyed task
            // retained): drop the output it carried.
            if (auto kept = tasks.find(id); kept != tasks.end()) kept->second.output.reset();
        }
        // From here on the context reports cancelled (SPEC §4).
        a.state->cancel.cancel();
    }

    void attempt_exited(Attempt& a) {
        std::lock_guard lock(mu);
        if (!unlink_running(a)) {
            logger()->warn("task {} lease {}: abandoned attempt returned after shutdown; its result was ignored",
                           a.state->task->id.value, a.state->lease.value);
            return;
        }
        check_drained();
    }

    // Shutdown waits `abandon_after` for coroutines of attempts the engine
    // has ended (all aborted by now); what ignores cancellation longer is
    // abandoned: it keeps what it uses alive, and its late result is ignored.
    void arm_abandon() {
        if (abandon_armed) return;
        abandon_armed = true;
        const auto at = core::add_saturated(clock->now(), options.abandon_after);
        abandon_timer->arm(at, [w = self] {
            if (auto core = w.lock()) core->s_->abandon_deaf_attempts();
        });
    }

    void abandon_deaf_attempts() {
        std::lock_guard lock(mu);
        while (running_attempts.next != &running_attempts) {
            Attempt& a = static_cast<Attempt&>(*running_attempts.next);
            logger()->warn("task {} lease {} (pool \"{}\", attempt {}): the executor ignored cancellation for {} ms; "
                           "abandoned, its result will be ignored",
                           a.state->task->id.value, a.state->lease.value, *a.pool->name, a.state->attempt,
                           options.abandon_after.count() / 1000000);
            unlink_running(a);
        }
        check_drained();
    }

    // ---- shutdown (mutex held) -------------------------------------------------
    void begin_shutdown(std::chrono::nanoseconds grace) {
        if (!shutting_down) logger()->info("shutting down (grace {} ms)", grace.count() / 1000000);
        shutting_down = true;
        if (recurring_timer) recurring_timer->disarm();
        // Waiting submitters try again and fail with ShuttingDown.
        for (PoolRuntime& p : pools)
            while (!p.waiting_submits.empty()) wake_next_submit(p);
        const auto now = clock->now();
        engine.shutdown(now, core::add_saturated(now, std::max(grace, std::chrono::nanoseconds(0))));
        apply(now);
        check_drained();
    }

    void check_drained() {
        if (!shutting_down || finished) return;
        if (engine.live_tasks() != 0) return;
        if (coroutines != 0) return arm_abandon();
        finished = true;
        armed.reset();
        timer->disarm();
        abandon_timer->disarm();
        recurring_timer->disarm();
        for (auto& w : subscribers)
            if (auto q = w.lock()) q->close();
        subscribers.clear();
        drained->set();
    }
};

// ---- SchedulerCore ------------------------------------------------------------

SchedulerCore::SchedulerCore(std::unique_ptr<State> state) : s_(std::move(state)) {}

SchedulerCore::~SchedulerCore() {
    // The timer's callback holds only a weak reference; cancel its wait.
    if (s_ && s_->timer) s_->timer->disarm();
    if (s_ && s_->recurring_timer) s_->recurring_timer->disarm();
    if (s_ && s_->abandon_timer) s_->abandon_timer->disarm();
}

std::shared_ptr<SchedulerCore> SchedulerCore::create(asio::any_io_executor executor, SchedulerOptions options,
                                                     std::vector<PoolDefinition> pools) {
    if (pools.empty()) throw ConfigError("pools: at least one pool is required");
    if (!executor) throw ConfigError("executor: build() needs a valid executor");
    for (const auto& d : pools) validate(d);
    if (options.blocking_threads > max_threads)
        throw ConfigError("blocking_threads: at most " + std::to_string(max_threads) + " (got " +
                          std::to_string(options.blocking_threads) + ")");
    if (options.abandon_after.count() < 0) throw ConfigError("abandon_after: must not be negative");
    auto state = std::make_unique<State>(executor, std::move(options));  // validates engine constants
    for (auto& d : pools) {
        d.engine.max_workers = d.max_workers;
        d.engine.min_workers = d.min_workers;
        state->engine.add_pool(d.engine);  // validates the rest, names the field
        asio::any_io_executor ex = d.run_on ? *d.run_on : executor;
        state->pools.push_back(PoolRuntime{std::move(d), std::move(ex)});
    }
    state->timer = state->clock->make_timer(executor);
    state->recurring_timer = state->clock->make_timer(executor);
    state->abandon_timer = state->clock->make_timer(executor);
    std::shared_ptr<SchedulerCore> core(new SchedulerCore(std::move(state)));
    core->s_->self = core;
    return core;
}

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::try_submit(TaskRequest r) {
    std::lock_guard lock(s_->mu);
    return s_->submit_one(r);
}

asio::awaitable<std::shared_ptr<HandleState>> SchedulerCore::submit(TaskRequest r) {
    auto self = shared_from_this();
    State& s = *s_;
    std::shared_ptr<WaitList> turn;  // set when it is this submitter's turn
    for (;;) {
        {
            std::lock_guard lock(s.mu);
            const auto pool_id = r.pool ? s.engine.find_pool(*r.pool) : std::optional<core::PoolId>(0);
            PoolRuntime* pool = pool_id ? &s.pools[*pool_id] : nullptr;
            // FIFO: a newcomer queues behind submitters already waiting.
            const bool queue_first = !turn && pool && !pool->waiting_submits.empty() && !s.shutting_down;
            if (!queue_first) {
                auto result = s.submit_one(r);
                const bool waits = !result && result.error() == SubmitError::Full && pool &&
                                   pool->def.engine.overflow == OverflowPolicy::Wait;
                if (!waits) {
                    if (!result) throw SubmitException(result.error(), result.message());
                    // Room may remain for the next waiter; if not, it waits again.
                    if (turn) s.wake_next_submit(*pool);
                    co_return std::move(result).value();
                }
            }
            const bool had_turn = turn != nullptr;
            turn = WaitList::create();
            if (had_turn)
                pool->waiting_submits.push_front(turn);  // it keeps its place
            else
                pool->waiting_submits.push_back(turn);
        }
        // A cancelled waiter leaves the queue in the cancellation itself,
        // under the mutex: either it leaves before room is handed to it, and
        // the next waiter gets the room, or the room came first and the wait
        // completes normally (and passes on what it does not use).
        UniqueFunction<void()> leave = [weak = weak_from_this(), turn] {
            auto core = weak.lock();
            if (!core) return;
            std::lock_guard lock(core->s_->mu);
            for (PoolRuntime& p : core->s_->pools) std::erase(p.waiting_submits, turn);
        };
        auto wait = turn->async_wait(asio::use_awaitable, std::move(leave));
        co_await std::move(wait);  // throws operation_aborted when cancelled: nothing was admitted
    }
}

std::vector<SubmitResult<std::shared_ptr<HandleState>>> SchedulerCore::try_submit_many(std::vector<TaskRequest> requests) {
    std::vector<SubmitResult<std::shared_ptr<HandleState>>> results;
    results.reserve(requests.size());
    std::lock_guard lock(s_->mu);
    for (TaskRequest& r : requests) results.push_back(s_->submit_one(r));
    return results;
}

SubmitResult<std::vector<std::shared_ptr<HandleState>>> SchedulerCore::try_submit_batch(std::vector<TaskRequest> requests) {
    State& s = *s_;
    std::lock_guard lock(s.mu);
    if (s.shutting_down) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
    const auto now = s.clock->now();
    const bool any_wall = std::any_of(requests.begin(), requests.end(), State::needs_wall);
    const auto wall = any_wall ? s.clock->system_now() : std::chrono::system_clock::time_point{};
    std::vector<core::TaskSpec> specs(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        if (auto failure = s.to_spec(requests[i], now, wall, specs[i]))
            return {failure->first, "task " + std::to_string(i) + ": " + failure->second};
    auto ids = s.engine.submit_batch(specs, now);
    if (!ids) return {ids.error(), ids.message()};
    std::vector<std::shared_ptr<HandleState>> handles;
    handles.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) handles.push_back(s.record(ids.value()[i], specs[i].pool, std::move(requests[i]), wall));
    s.apply(now);
    return handles;
}

void SchedulerCore::add_recurring(RecurringRequest r) {
    if (r.name.empty()) throw ConfigError("recurring: name must not be empty");
    const std::string where = "recurring \"" + r.name + "\": ";
    std::optional<CronExpr> expr;
    try {
        expr = CronExpr::parse(r.cron);
        (void)expr->next_after(std::chrono::system_clock::now(), r.tz);  // validates the zone
    } catch (const ConfigError& e) {
        throw ConfigError(where + e.what());
    }
    if (r.deadline_after && r.deadline_after->count() <= 0) throw ConfigError(where + "deadline_after must be positive");
    std::lock_guard lock(s_->mu);
    if (r.task.pool && !s_->engine.find_pool(*r.task.pool))
        throw ConfigError(where + "no pool named \"" + *r.task.pool + "\"");
    if (s_->shutting_down) throw ConfigError(where + "the scheduler is shutting down");
    const auto first = expr->next_after(s_->clock->system_now(), r.tz);
    Schedule schedule{std::move(r), *expr, first.value_or(std::chrono::system_clock::time_point::max()), std::nullopt};
    const std::string name = schedule.request.name;
    s_->schedules.insert_or_assign(name, std::move(schedule));
    s_->rearm_recurring();
}

bool SchedulerCore::remove_recurring(std::string_view name) {
    std::lock_guard lock(s_->mu);
    auto it = s_->schedules.find(name);
    if (it == s_->schedules.end()) return false;
    s_->schedules.erase(it);
    s_->rearm_recurring();
    return true;
}

void SchedulerCore::set_rate(std::string_view bucket, double rate_per_s) {
    std::lock_guard lock(s_->mu);
    const auto now = s_->clock->now();
    auto problem = s_->engine.set_rate(bucket, rate_per_s, now);
    s_->apply(now);
    if (problem) throw ConfigError("set_rate: " + *problem);
}

bool SchedulerCore::cancel(const TaskRef& ref) {
    std::lock_guard lock(s_->mu);
    const auto task = s_->resolve(ref);
    if (!task) return false;
    const auto now = s_->clock->now();
    const bool cancelled = s_->engine.cancel(*task, now);
    s_->apply(now);
    return cancelled;
}

std::optional<TaskStatus> SchedulerCore::status(const TaskRef& ref) const {
    std::lock_guard lock(s_->mu);
    const auto task = s_->resolve(ref);
    return task ? s_->engine.status(*task) : std::nullopt;
}

asio::awaitable<void> SchedulerCore::shutdown(std::chrono::nanoseconds grace) {
    auto self = shared_from_this();
    std::shared_ptr<WaitList> drained;
    {
        std::lock_guard lock(s_->mu);
        s_->begin_shutdown(grace);
        drained = s_->drained;
    }
    co_await drained->async_wait(asio::use_awaitable);
}

void SchedulerCore::shutdown_now() {
    std::lock_guard lock(s_->mu);
    s_->begin_shutdown(std::chrono::nanoseconds(0));
}

std::shared_ptr<EventQueue> SchedulerCore::subscribe() {
    auto q = std::make_shared<EventQueue>(s_->options.event_capacity);
    std::lock_guard lock(s_->mu);
    if (s_->drained->is_set())
        q->close();
    else
        s_->subscribers.push_back(q);
    return q;
}

asio::any_io_executor SchedulerCore::get_executor() const { return s_->executor; }

asio::any_io_executor SchedulerCore::blocking_executor() {
    std::lock_guard lock(s_->mu);
    if (!s_->blocking) {
        std::size_t n = s_->options.blocking_threads;
        if (n == 0) n = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, max_threads);
        // Throws std::system_error when a thread cannot start; the next
        // offload tries again.
        s_->blocking = std::make_unique<BlockingPool>(n);
    }
    return s_->blocking->get_executor();
}

void SchedulerCore::heartbeat(LeaseId lease) {
    std::lock_guard lock(s_->mu);
    s_->engine.heartbeat(lease, s_->clock->now());
}

std::optional<core::PoolCounters> SchedulerCore::counters(std::string_view pool) const {
    std::lock_guard lock(s_->mu);
    auto id = s_->engine.find_pool(pool);
    if (!id) return std::nullopt;
    return s_->engine.counters(*id);
}

Snapshot SchedulerCore::snapshot() const {
    std::lock_guard lock(s_->mu);
    const auto now = s_->clock->now();
    Snapshot out;
    out.pools.reserve(s_->pools.size());
    for (core::PoolId i = 0; i < s_->pools.size(); ++i) {
        const core::PoolStats st = s_->engine.stats(i, now);
        PoolSnapshot& p = out.pools.emplace_back();
        p.name = s_->pools[i].def.engine.name;
        p.window = st.window;
        p.capacity = st.capacity;
        p.busy = st.busy;
        p.held = st.held;
        p.desired = st.desired;
        p.pending = st.pending;
        p.blocked = st.blocked;
        p.scheduled = st.scheduled;
        p.retrying = st.retrying;
        p.dispatched = st.dispatched;
        p.succeeded = st.succeeded;
        p.failed = st.failed;
        p.retried = st.retried;
        p.dead_lettered = st.dead_lettered;
        p.shed = st.shed;
        p.wait_p50 = st.wait_p50;
        p.wait_p90 = st.wait_p90;
        p.wait_p99 = st.wait_p99;
        p.run_p50 = st.run_p50;
        p.run_p99 = st.run_p99;
        p.utilization = st.utilization;
        p.worker_seconds = st.worker_seconds;
        p.priority_adherence = st.priority_adherence;
        p.fixed_start_hit_rate = st.fixed_start_hit_rate;
    }
    return out;
}

std::uint64_t SchedulerCore::lock_acquisitions() const {
    std::lock_guard lock(s_->mu);
    return s_->mu.acquisitions();
}

std::uint64_t SchedulerCore::late_reports() const {
    std::lock_guard lock(s_->mu);
    return s_->engine.late_reports();
}

}  // namespace cronoq::detail
