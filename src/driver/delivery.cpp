// What steps leave for after the engine's mutex (delivery.hpp).
#include "delivery.hpp"

#include "event_queue.hpp"

#include <cronoq/config_error.hpp>

#include <algorithm>
#include <utility>

namespace cronoq::detail {

void Delivery::deliver(store::Sequence step_seq) {
    for (Deferred& d : delivering_) {
        // With a store, what acknowledges waits for its step's commit.
        if (step_seq > 0 && (std::holds_alternative<Finish>(d) || std::holds_alternative<Ack>(d)) && step_seq > committed_) {
            if (lost_)
                fail_uncommitted(d);
            else
                held_.emplace(step_seq, std::move(d));
            continue;
        }
        deliver_one(d);
    }
}

void Delivery::deliver_one(Deferred& d) {
    if (auto* f = std::get_if<Finish>(&d)) {
        f->record->finish(f->status, f->attempt, std::move(f->message), std::move(f->output));
    } else if (auto* e = std::get_if<StatusEvent>(&d)) {
        std::erase_if(subscribers_, [&](const std::weak_ptr<EventQueue>& w) {
            auto q = w.lock();
            if (q) q->push(*e);
            return !q;
        });
        subscriber_count_.store(subscribers_.size(), std::memory_order_relaxed);
    } else if (auto* line = std::get_if<UniqueFunction<void()>>(&d)) {
        (*line)();
    } else if (std::holds_alternative<Drained>(d)) {
        for (auto& w : subscribers_)
            if (auto q = w.lock()) q->close();
        subscribers_.clear();
        subscriber_count_.store(0, std::memory_order_relaxed);
        drained_->set();
    } else if (auto* ack = std::get_if<Ack>(&d)) {
        ack->done->set();
    }
}

void Delivery::fail_uncommitted(Deferred& d) {
    if (auto* f = std::get_if<Finish>(&d)) {
        // Its end was never committed: the store holds it as it was before.
        const TaskStatus last = is_terminal(f->status) ? TaskStatus::Running : f->status;
        f->record->finish(last, f->attempt, "leadership lost before this result was committed: " + *lost_, nullptr);
    } else if (auto* ack = std::get_if<Ack>(&d)) {
        ack->done->set();  // the waiter sees that its sequence was not committed
    }
}

bool Delivery::subscribe(const std::shared_ptr<EventQueue>& q) {
    ScopedLock lock(mu_);
    if (drained_->is_set()) return false;
    subscribers_.push_back(q);
    subscriber_count_.store(subscribers_.size(), std::memory_order_relaxed);
    return true;
}

void Delivery::committed(store::Sequence seq) {
    ScopedLock lock(mu_);
    if (seq <= committed_) return;
    committed_ = seq;
    commit_seen_.notify_all();
    while (!held_.empty() && held_.begin()->first <= committed_) {
        auto node = held_.extract(held_.begin());
        deliver_one(node.mapped());
    }
}

void Delivery::lead_lost(const store::LeadershipLost& lost) {
    ScopedLock lock(mu_);
    lost_ = lost.message;
    commit_seen_.notify_all();
    std::vector<Deferred> held;
    for (auto& [seq, d] : held_) held.push_back(std::move(d));
    held_.clear();
    for (Deferred& d : held) fail_uncommitted(d);
    if (!open_error_ && lost.recovery_error)
        open_error_.emplace(*lost.recovery_error, lost.message);
    else if (!open_error_ && lost.reason != store::LostReason::Released)
        open_error_.emplace(StoreErrorKind::Fenced, "leadership lost: " + lost.message);
}

void Delivery::wait_commit(store::Sequence seq, std::shared_ptr<WaitList> done) {
    ScopedLock lock(mu_);
    if (seq <= committed_ || lost_)
        done->set();
    else
        held_.emplace(seq, Ack{std::move(done)});
}

// The wait is the condition variable's, which takes a std::unique_lock.
void Delivery::block_until_committed(store::Sequence seq) CRONOQ_NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock lock(mu_);
    commit_seen_.wait(lock, [&]() CRONOQ_REQUIRES(mu_) { return committed_ >= seq || lost_; });
}

bool Delivery::is_committed(store::Sequence seq) {
    ScopedLock lock(mu_);
    return seq <= committed_;
}

store::Sequence Delivery::committed_through() {
    ScopedLock lock(mu_);
    return committed_;
}

std::optional<std::string> Delivery::lost() {
    ScopedLock lock(mu_);
    return lost_;
}

void Delivery::refuse_open(std::string why) {
    ScopedLock lock(mu_);
    refused_ = std::move(why);
}

void Delivery::throw_open_error() {
    ScopedLock lock(mu_);
    if (refused_) throw ConfigError(*refused_);
    if (open_error_) throw *open_error_;
}

}  // namespace cronoq::detail
