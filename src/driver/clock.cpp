// The steady clock and the manual clock for tests.
#include <cronoq/clock.hpp>
#include <cronoq/manual_clock.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/prefer.hpp>
#include <asio/steady_timer.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <optional>

namespace cronoq {

namespace {

class SteadyClock final : public Clock {
public:
    core::Time now() const override { return core::Time(std::chrono::steady_clock::now().time_since_epoch()); }
    std::chrono::system_clock::time_point system_now() const override { return std::chrono::system_clock::now(); }

    // The Asio timer is made on first use: the first timer of an
    // io_context starts its reactor, and from then on every pass of its
    // run loop polls the kernel (epoll_wait). A scheduler whose engine never
    // asks for a wakeup (no timeouts, starts, backoffs, buckets) keeps the
    // application's io_context free of that cost.
    //
    // Arming it later than its wait already runs is lazy: the wait is left
    // as it is and, when it ends, waits again for the later time. Moving an
    // Asio wait cancels it, which posts the cancelled handler and so wakes
    // the io_context's thread from whichever thread armed the timer: the
    // engine's next wakeup moves later at nearly every step of a busy
    // remote pool (the oldest lease's TTL), and each such move cost a
    // context switch (docs/remote.md, "Writes"). Only an earlier time
    // moves the wait.
    class SteadyTimer final : public Timer {
    public:
        explicit SteadyTimer(asio::any_io_executor ex) : state_(std::make_shared<State>(std::move(ex))) {}
        ~SteadyTimer() override { disarm(); }
        void arm(core::Time at, std::function<void()> on_due) override {
            const auto due = std::chrono::steady_clock::time_point(
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(at.time_since_epoch()));
            std::lock_guard lock(state_->mu);
            state_->due = due;
            state_->on_due = std::move(on_due);
            if (state_->waiting && state_->waiting_until <= due) return;  // it waits again when it ends
            wait_locked(state_, due);
        }
        void disarm() override {
            std::lock_guard lock(state_->mu);
            state_->due.reset();
            state_->on_due = nullptr;
            // Cancelled, not left to run out: a pending wait is outstanding
            // work that would keep the application's io_context running.
            if (state_->waiting && state_->timer) state_->timer->cancel();
            state_->waiting = false;
        }

    private:
        using TimePoint = std::chrono::steady_clock::time_point;
        // Shared with the wait's handler, which holds it weakly: the timer
        // may go while a wait is pending.
        struct State {
            explicit State(asio::any_io_executor e) : ex(std::move(e)) {}
            std::mutex mu;
            asio::any_io_executor ex;
            std::optional<asio::steady_timer> timer;
            std::optional<TimePoint> due;  // what the last arm asked for; none once fired or disarmed
            std::function<void()> on_due;
            bool waiting = false;     // a wait is pending, until waiting_until
            TimePoint waiting_until;
            std::uint64_t wait_id = 0;  // the pending wait's; a replaced one ends as stale
        };

        static void wait_locked(const std::shared_ptr<State>& state, TimePoint until) {
            if (!state->timer) state->timer.emplace(state->ex);
            state->timer->expires_at(until);  // cancels a pending wait, which then ends as stale
            state->waiting = true;
            state->waiting_until = until;
            state->timer->async_wait([weak = std::weak_ptr<State>(state), id = ++state->wait_id](std::error_code ec) {
                if (ec) return;
                auto state = weak.lock();
                if (!state) return;
                std::function<void()> fire;
                {
                    std::lock_guard lock(state->mu);
                    if (id != state->wait_id || !state->waiting) return;
                    state->waiting = false;
                    if (!state->due) return;
                    if (*state->due > std::chrono::steady_clock::now()) return wait_locked(state, *state->due);
                    state->due.reset();
                    fire = std::move(state->on_due);
                    state->on_due = nullptr;
                }
                if (fire) fire();
            });
        }

        std::shared_ptr<State> state_;
    };

    std::unique_ptr<Timer> make_timer(asio::any_io_executor ex) override { return std::make_unique<SteadyTimer>(std::move(ex)); }
};

}  // namespace

std::shared_ptr<Clock> Clock::steady() {
    static const std::shared_ptr<Clock> clock = std::make_shared<SteadyClock>();
    return clock;
}

// ---- ManualClock ----------------------------------------------------------------

struct ManualClock::Entry {
    core::Time at;
    std::function<void()> on_due;
    asio::any_io_executor work;  // tracks outstanding work while armed
};

class ManualClock::ManualTimer final : public Timer {
public:
    ManualTimer(ManualClock& clock, asio::any_io_executor ex) : clock_(clock), ex_(std::move(ex)) {}
    ~ManualTimer() override { disarm(); }

    void arm(core::Time at, std::function<void()> on_due) override {
        auto entry = std::make_shared<Entry>(
            Entry{at, std::move(on_due), asio::prefer(ex_, asio::execution::outstanding_work.tracked)});
        {
            std::lock_guard lock(clock_.mu_);
            remove_locked();
            entry_ = entry;
            clock_.armed_.push_back(entry);
        }
        clock_.fire_due();
    }

    void disarm() override {
        std::lock_guard lock(clock_.mu_);
        remove_locked();
    }

private:
    void remove_locked() {
        if (!entry_) return;
        std::erase(clock_.armed_, entry_);
        entry_.reset();
    }

    ManualClock& clock_;
    asio::any_io_executor ex_;
    std::shared_ptr<Entry> entry_;
};

namespace {

// Engine time of a new ManualClock (an arbitrary origin); wall time is its
// start plus the engine time since this origin.
constexpr core::Time manual_origin{std::chrono::hours(24)};

std::int64_t nanos_since_epoch(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t nanos_since_origin(core::Time t) { return core::diff_saturated(t, manual_origin).count(); }

}  // namespace

ManualClock::ManualClock(std::chrono::system_clock::time_point start)
    : now_(manual_origin), system_start_(start) {}

std::chrono::system_clock::time_point ManualClock::default_start() {
    // 2026-01-01T00:00:00Z
    return std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));
}

core::Time ManualClock::now() const {
    std::lock_guard lock(mu_);
    return now_;
}

std::chrono::system_clock::time_point ManualClock::system_now() const {
    std::lock_guard lock(mu_);
    // Saturating: after advance(nanoseconds::max()) wall time stays at the
    // end of its range instead of wrapping into the past.
    const std::int64_t wall = core::add_saturated(nanos_since_epoch(system_start_), nanos_since_origin(now_));
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(wall)));
}

void ManualClock::set_system_time(std::chrono::system_clock::time_point t) {
    std::lock_guard lock(mu_);
    system_start_ = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::nanoseconds(core::sub_saturated(nanos_since_epoch(t), nanos_since_origin(now_)))));
}

std::unique_ptr<Clock::Timer> ManualClock::make_timer(asio::any_io_executor executor) {
    return std::make_unique<ManualTimer>(*this, std::move(executor));
}

void ManualClock::advance_by(std::chrono::nanoseconds d) {
    {
        std::lock_guard lock(mu_);
        if (d.count() > 0) now_ = core::add_saturated(now_, d);
    }
    fire_due();
}

bool ManualClock::advance_to_next() {
    {
        std::lock_guard lock(mu_);
        if (armed_.empty()) return false;
        auto next = std::min_element(armed_.begin(), armed_.end(), [](auto& a, auto& b) { return a->at < b->at; });
        now_ = std::max(now_, (*next)->at);
    }
    fire_due();
    return true;
}

void ManualClock::fire_due() {
    std::vector<std::shared_ptr<Entry>> due;
    {
        std::lock_guard lock(mu_);
        auto split = std::stable_partition(armed_.begin(), armed_.end(), [&](auto& e) { return e->at > now_; });
        due.assign(split, armed_.end());
        armed_.erase(split, armed_.end());
    }
    std::sort(due.begin(), due.end(), [](auto& a, auto& b) { return a->at < b->at; });
    for (auto& e : due) {
        // The timer may keep its entry: release the entry's work now; the
        // posted callback is outstanding work of its own until it runs.
        auto work = std::move(e->work);
        e->work = asio::any_io_executor();
        asio::post(work, std::move(e->on_due));
    }
}

}  // namespace cronoq
