#include "loop.hpp"
#include "report.hpp"

#include <algorithm>

namespace cronoq::sim {

Loop::Loop(const Trace& trace, Policy policy, const SimConfig& config)
    : trace_(trace),
      workers_(config.workers),
      state_(trace.tasks.size(), State::NotArrived),
      attempts_(trace.tasks.size(), 0) {
    if (trace.variant == Variant::Main)
        model_ = std::make_unique<ScoreModel>(trace, engine_config(policy, config), config.verify_model);
    result_.policy = policy;
    result_.judged = model_ != nullptr;
    result_.dispatched.assign(trace.tasks.size(), not_yet);
    result_.finished.assign(trace.tasks.size(), not_yet);
    result_.ended.assign(trace.tasks.size(), Ended::No);
    result_.rejected.assign(trace.tasks.size(), false);
    result_.spare_at_arrival.assign(trace.tasks.size(), false);
}

void Loop::start(std::uint32_t task, Nanos now) {
    if (state_[task] != State::Waiting) {
        problem("task " + std::to_string(task) + " started while not waiting");
        return;
    }
    if (attempts_[task] >= max_attempts) {
        problem("task " + std::to_string(task) + " started past max_attempts");
        return;
    }
    if (running_.size() >= workers_) problem("more attempts running than workers");
    if (model_) {
        if (attempts_[task] != 0) problem("a retry in a main trace");
        const ScoreModel::Verdict v = model_->dispatch(task, now);
        if (v.contended) {
            ++result_.contended;
            if (v.best) ++result_.contended_best;
        }
    }
    if (attempts_[task] == 0 && trace_.tasks[task].has_start())
        pending_starts_.erase(pending_starts_.find(trace_.tasks[task].start));
    ++result_.dispatches;
    result_.busy += std::min(trace_.tasks[task].service, trace_.horizon - now);
    if (attempts_[task]++ == 0) result_.dispatched[task] = now;
    state_[task] = State::Running;
    running_.emplace(now + trace_.tasks[task].service, task);
}

void Loop::end(std::uint32_t task, Ended how, Nanos now) {
    if (state_[task] != State::Waiting) {
        problem("task " + std::to_string(task) + " ended while not waiting for it");
        return;
    }
    state_[task] = State::Ended;
    result_.finished[task] = now;
    result_.ended[task] = how;
}

void Loop::retried(std::uint32_t task) {
    if (state_[task] != State::Waiting) problem("task " + std::to_string(task) + " retried while not waiting");
    ++result_.retries;
}

void Loop::reject(std::uint32_t task) {
    state_[task] = State::Rejected;
    result_.rejected[task] = true;
}

void Loop::note_arrival(std::uint32_t task, Nanos now) {
    const std::size_t idle = workers_ - std::min(workers_, running_.size());
    // Counting stops at `idle`: thousands of starts may be pending.
    std::size_t waited_for = 0;
    for (auto it = pending_starts_.lower_bound(now); it != pending_starts_.end() && *it <= now + max_hold && waited_for < idle;
         ++it)
        ++waited_for;
    result_.spare_at_arrival[task] = idle > waited_for;
    if (trace_.tasks[task].has_start()) pending_starts_.insert(trace_.tasks[task].start);
}

void Loop::finish() {
    for (State s : state_) {
        result_.running_at_horizon += s == State::Running;
        result_.waiting_at_horizon += s == State::Waiting;
    }
    if (model_) {
        result_.model_mismatches = model_->verify_mismatches();
        if (model_->ready() != result_.waiting_at_horizon) problem("the score model's ready set != the waiting tasks");
    }
}

}  // namespace cronoq::sim
