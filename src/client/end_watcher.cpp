// A client's one watcher (end_watcher.hpp).
#include "end_watcher.hpp"

#include <exception>
#include <utility>
#include <vector>

namespace cronoq::detail {

void EndWait::finish(ClientEnd end) {
    {
        std::lock_guard lock(mu_);
        if (finished_) return;
        end_ = std::move(end);
        finished_ = true;
    }
    cv_.notify_all();
    done_.set();
}

std::optional<ClientEnd> EndWait::wait_blocking(std::optional<std::chrono::nanoseconds> timeout) {
    std::unique_lock lock(mu_);
    if (!timeout) {
        cv_.wait(lock, [&] { return finished_; });
    } else if (!cv_.wait_for(lock, *timeout, [&] { return finished_; })) {
        return std::nullopt;
    }
    return end_;
}

EndWatcher::EndWatcher(Store& store, store::ClientAccess& access)
    : store_(store), access_(access), thread_([this] { loop(); }) {}

EndWatcher::~EndWatcher() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        if (watch_) watch_->interrupt();
    }
    cv_.notify_all();
    if (thread_.get_id() == std::this_thread::get_id())
        thread_.detach();  // cannot happen through the core's design; never join itself
    else
        thread_.join();
}

std::shared_ptr<EndWait> EndWatcher::await(TaskId id) {
    auto wait = std::make_shared<EndWait>(id);
    {
        std::lock_guard lock(mu_);
        waits_.emplace(id.value, wait);
        look_now_ = true;
        if (watch_) watch_->interrupt();
    }
    cv_.notify_all();
    return wait;
}

void EndWatcher::forget(const std::shared_ptr<EndWait>& wait) {
    std::lock_guard lock(mu_);
    auto [first, last] = waits_.equal_range(wait->id().value);
    for (auto it = first; it != last; ++it)
        if (it->second == wait) {
            waits_.erase(it);
            return;
        }
}

void EndWatcher::loop() {
    std::unique_lock lock(mu_);
    while (true) {
        cv_.wait(lock, [&] { return stopping_ || !waits_.empty(); });
        if (stopping_) return;
        const bool now = std::exchange(look_now_, false);
        lock.unlock();
        try {
            if (!watch_) {
                auto watch = access_.watch();
                std::lock_guard set(mu_);
                watch_ = std::move(watch);
            }
            // Whatever the watch says, look: after a change, or after the
            // safety poll's timeout.
            if (!now) watch_->wait(safety_poll);
            look();
            lock.lock();
        } catch (const std::exception&) {
            // The store cannot be read now: the waits go on, and the
            // watcher looks again after a pause (or when told to stop).
            lock.lock();
            cv_.wait_for(lock, safety_poll, [&] { return stopping_; });
        }
    }
}

// One read for every awaited task; then the committed row of each that ended.
void EndWatcher::look() {
    std::vector<TaskId> ids;
    {
        std::lock_guard lock(mu_);
        ids.reserve(waits_.size());
        std::uint64_t previous = 0;
        for (const auto& [id, wait] : waits_)
            if (id != previous || ids.empty()) {
                ids.push_back(TaskId{id});
                previous = id;
            }
    }
    if (ids.empty()) return;
    for (const auto& [id, status] : access_.ended(ids)) {
        ClientEnd end = end_of(id, status);
        std::vector<std::shared_ptr<EndWait>> done;
        {
            std::lock_guard lock(mu_);
            auto [first, last] = waits_.equal_range(id.value);
            for (auto it = first; it != last; ++it) done.push_back(std::move(it->second));
            waits_.erase(first, last);
        }
        for (auto& wait : done) wait->finish(end);
    }
}

ClientEnd EndWatcher::end_of(TaskId id, TaskStatus status) {
    ClientEnd end;
    end.status = status;
    if (auto row = store_.get_task(TaskRef(id))) {
        end.status = row->status;
        end.attempt = row->attempt;
        end.message = std::move(row->last_error);
        end.output = std::move(row->output);
    } else {
        end.message = "the store no longer holds the task (pruned)";
    }
    return end;
}

}  // namespace cronoq::detail
