// The ways a task is submitted (`try_submit`, `submit`, `try_submit_many`,
// `try_submit_batch`): each makes its submissions, has them encoded before
// the engine's mutex, and admits them through the one entry, `admit`
// (submission.hpp; docs/design.md, "One submission path").
#include <cronoq/detail/scheduler_core.hpp>

#include "actions.hpp"
#include "scheduler_state.hpp"

#include <asio/use_awaitable.hpp>

#include <utility>

namespace cronoq::detail {

namespace {

// try_submit_many's tasks without encoding: one submission filled with
// each task in turn, no array of requests, which at 432 bytes each would be
// the largest the batch writes. A task with options assigns every field
// of it; one without sets the payload, pool, kind and priority, and finds
// the rest at the defaults: submitting such a task moves out only fields
// that were at their defaults already (a task without options has no key,
// tags or traceparent), and after a task with options it is reset.
class TasksInPlace final : public Submissions {
public:
    explicit TasksInPlace(ManyTasks& tasks) : tasks_(tasks), s_(request_) {}
    std::size_t size() const override { return tasks_.size(); }
    Submission& at(std::size_t i) override {
        if (i == current_) return s_;
        current_ = i;
        TaskState& task = tasks_.task(i);
        TaskRequest& request = s_.request;
        if (task.has_more()) {
            clean_ = false;
        } else if (!clean_) {
            request = TaskRequest{};
            clean_ = true;
        } else {
            request.tags.clear();  // moved from: empty, but say so
        }
        task.move_into(request);
        return s_;
    }
    void result(std::size_t, Admitted&& r) override { tasks_.result(std::move(r)); }

private:
    ManyTasks& tasks_;
    TaskRequest request_;
    Submission s_;
    bool clean_ = true;
    std::size_t current_ = static_cast<std::size_t>(-1);
};

// Submissions made whole first (to be encoded before the mutex); results
// handed on as they come, or kept.
template <class Sink>
class SubmissionList final : public Submissions {
public:
    SubmissionList(std::vector<Submission>& list, Sink sink) : list_(list), sink_(std::move(sink)) {}
    std::size_t size() const override { return list_.size(); }
    Submission& at(std::size_t i) override { return list_[i]; }
    void result(std::size_t i, Admitted&& r) override { sink_(i, std::move(r)); }

private:
    std::vector<Submission>& list_;
    Sink sink_;
};

}  // namespace

SubmitResult<std::shared_ptr<HandleState>> SchedulerCore::try_submit(TaskRequest r) {
    Submission s(r);
    s.encode_with(s_->encoder);
    s_->look_across_shards({&s, 1});
    OneSubmission one(s);
    State::Step step(*s_);
    const auto now = s_->clock->now();
    s_->admit(one, AdmitMode::Each, now);
    s_->actions.apply(s_->held(), now);
    return std::move(one).take();
}

asio::awaitable<std::shared_ptr<HandleState>> SchedulerCore::submit(TaskRequest r) {
    auto self = shared_from_this();
    State& s = *s_;
    Submission submission(r);
    submission.encode_with(s.encoder);
    s.look_across_shards({&submission, 1});
    if (submission.refused) throw SubmitException(submission.refused->first, submission.refused->second);
    std::shared_ptr<WaitList> turn;  // set when it is this submitter's turn
    std::shared_ptr<HandleState> handle;
    for (;;) {
        {
            State::Step step(s);
            const TaskRequest& request = submission.request;
            const auto pool_id = request.pool ? s.engine.find_pool(*request.pool) : std::optional<core::PoolId>(0);
            PoolRuntime* pool = pool_id ? &s.pools[*pool_id] : nullptr;
            // FIFO: a newcomer queues behind submitters already waiting.
            const bool queue_first = !turn && pool && !pool->waiting_submits.empty() && !s.shutdown.shutting_down(s.held());
            if (!queue_first) {
                OneSubmission one(submission);
                const auto now = s.clock->now();
                s.admit(one, AdmitMode::Each, now);
                s.actions.apply(s.held(), now);
                auto result = std::move(one).take();
                const bool waits = !result && result.error() == SubmitError::Full && pool &&
                                   pool->def.engine.overflow == OverflowPolicy::Wait;
                if (!waits) {
                    if (!result) throw SubmitException(result.error(), result.message());
                    // Room may remain for the next waiter; if not, it waits again.
                    if (turn) s.actions.wake_next_submit(s.held(), *pool);
                    handle = std::move(result).value();
                    break;
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
            State::Step step(*core->s_);
            for (PoolRuntime& p : core->s_->pools) std::erase(p.waiting_submits, turn);
        };
        auto wait = turn->async_wait(asio::use_awaitable, std::move(leave));
        co_await std::move(wait);  // throws operation_aborted when cancelled: nothing was admitted
    }
    // With a store, admission is acknowledged once it is committed (docs/guide/durability.md).
    if (s.durable) {
        auto committed = flush();
        try {
            co_await std::move(committed);
        } catch (const StoreError& e) {
            throw SubmitException(SubmitError::StoreFailed, e.what());
        }
    }
    co_return handle;
}

void SchedulerCore::try_submit_many(ManyTasks& tasks) {
    State& s = *s_;
    // One instant for the whole batch, and its actions applied once: a
    // clock read and a pass over the engine's actions are needed once per
    // batch, not once per task.
    if (!s.encoder.needs_any()) {
        TasksInPlace in_place(tasks);
        State::Step step(s);
        const auto now = s.clock->now();
        s.admit(in_place, AdmitMode::Each, now);
        s.actions.apply(s.held(), now);
        return;
    }
    // With a store or a remote pool, each request's bytes are made before
    // the engine's mutex: every request is made whole first.
    std::vector<TaskRequest> requests(tasks.size());
    std::vector<Submission> list;
    list.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        requests[i] = std::move(tasks.task(i));
        list.emplace_back(requests[i]).encode_with(s.encoder);
    }
    s.look_across_shards(list);
    auto sink = [&tasks](std::size_t, Admitted&& r) { tasks.result(std::move(r)); };
    SubmissionList<decltype(sink)> group(list, sink);
    State::Step step(s);
    const auto now = s.clock->now();
    s.admit(group, AdmitMode::Each, now);
    s.actions.apply(s.held(), now);
}

SubmitResult<std::vector<std::shared_ptr<HandleState>>> SchedulerCore::try_submit_batch(std::vector<TaskRequest> requests) {
    State& s = *s_;
    std::vector<Submission> list;
    list.reserve(requests.size());
    for (TaskRequest& r : requests) list.emplace_back(r).encode_with(s.encoder);
    s.look_across_shards(list);
    std::vector<std::shared_ptr<HandleState>> handles;
    handles.reserve(list.size());
    std::optional<Admitted> refused;
    auto sink = [&](std::size_t, Admitted&& r) {
        if (r)
            handles.push_back(std::move(r).value());
        else if (!refused)
            refused.emplace(std::move(r));
    };
    SubmissionList<decltype(sink)> group(list, sink);
    {
        State::Step step(s);
        if (s.shutdown.shutting_down(s.held())) return {SubmitError::ShuttingDown, "the scheduler is shutting down"};
        const auto now = s.clock->now();
        s.admit(group, AdmitMode::All, now);
        s.actions.apply(s.held(), now);
    }
    if (refused) return {refused->error(), refused->message()};
    return handles;
}

}  // namespace cronoq::detail
