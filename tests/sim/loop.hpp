#pragma once
// The event loop every policy runs in: arrivals from the trace, attempts
// ending after their service time, and the policy's own timers (the
// engine's wakeups; a baseline's fixed starts and retry backoffs). At equal
// times a policy timer comes first, then a completion, then an arrival (as
// the engine, which runs what is due before it handles a call).
#include "score_model.hpp"
#include "sim.hpp"

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::sim {

inline constexpr Nanos never = std::numeric_limits<Nanos>::max();

class Loop {
public:
    Loop(const Trace& trace, Policy policy, const SimConfig& config);

    /// Runs to the horizon. `P` has arrive(task, now), complete(task, end,
    /// now), next_wakeup() (a time, or `never`) and wake(now).
    template <class P>
    void run(P& policy) {
        std::size_t next_arrival = 0;
        Nanos last = 0;
        while (true) {
            const Nanos arrival = next_arrival < trace_.tasks.size() ? trace_.tasks[next_arrival].arrival : never;
            const Nanos completion = running_.empty() ? never : running_.top().first;
            const Nanos wake = std::max(policy.next_wakeup(), last);
            const Nanos now = std::min({arrival, completion, wake});
            if (now == never || now > trace_.horizon) break;
            last = now;
            if (wake <= completion && wake <= arrival) {
                policy.wake(now);
            } else if (completion <= arrival) {
                const std::uint32_t task = running_.top().second;
                running_.pop();
                state_[task] = State::Waiting;
                result_.completions.push_back(now);
                policy.complete(task, trace_.tasks[task].attempts[attempts_[task] - 1], now);
            } else {
                const auto task = static_cast<std::uint32_t>(next_arrival++);
                state_[task] = State::Waiting;
                note_arrival(task, now);
                if (model_) model_->arrive(task, now);
                policy.arrive(task, now);
            }
        }
        finish();
    }

    /// A policy starts an attempt of `task` at `now`.
    void start(std::uint32_t task, Nanos now);
    /// A policy ends `task` (after its attempt completed, or never started).
    void end(std::uint32_t task, Ended how, Nanos now);
    /// A failed attempt of `task` will be retried.
    void retried(std::uint32_t task);
    /// The policy refused `task` at its arrival.
    void reject(std::uint32_t task);

    std::uint32_t attempts(std::uint32_t task) const { return attempts_[task]; }
    /// The score model, on main traces only (where adherence is judged).
    ScoreModel* model() { return model_.get(); }
    RunResult& result() { return result_; }
    void problem(std::string what) {
        if (result_.problems.size() < 10) result_.problems.push_back(std::move(what));
    }

private:
    enum class State : std::uint8_t { NotArrived, Waiting, Running, Ended, Rejected };
    using Running = std::pair<Nanos, std::uint32_t>;  // (completion time, task)

    void finish();
    void note_arrival(std::uint32_t task, Nanos now);

    const Trace& trace_;
    std::size_t workers_;
    std::unique_ptr<ScoreModel> model_;
    RunResult result_;
    std::vector<State> state_;
    std::vector<std::uint32_t> attempts_;
    std::priority_queue<Running, std::vector<Running>, std::greater<>> running_;
    std::multiset<Nanos> pending_starts_;  // of fixed-start tasks that have not started
};

}  // namespace cronoq::sim
