#pragma once
// The shared state behind a CancellationToken and TaskContext::cancelled().
#include <cronoq/detail/parking.hpp>
#include <cronoq/detail/wait_list.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace cronoq::detail {

/// Logs the exception being handled, thrown by `what` (a cancellation
/// callback): cancellation goes on past a throwing callback.
void log_contained_exception(const char* what) noexcept;

class CancelState {
public:
    bool is_cancelled() const { return cancelled_.load(std::memory_order_acquire); }

    /// Registers `callback` and returns its id; when already cancelled,
    /// runs it at once on this thread (what it throws reaches the caller)
    /// and returns 0.
    std::uint64_t on_cancel(std::function<void()> callback) {
        {
            std::lock_guard lock(mu_);
            used_.store(true, std::memory_order_seq_cst);  // see cancel()
            if (!cancelled_.load(std::memory_order_seq_cst)) {
                const std::uint64_t id = ++next_id_;
                callbacks_.emplace_back(id, std::move(callback));
                return id;
            }
        }
        callback();
        return 0;
    }

    /// True if callback `id` was taken back before it ran. Otherwise false,
    /// after waiting for it to return if it runs on another thread.
    bool remove(std::uint64_t id) {
        std::unique_lock lock(mu_);
        for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
            if (it->first == id) {
                callbacks_.erase(it);
                return true;
            }
        }
        if (id != 0 && running_.load(std::memory_order_relaxed) == id && runner_ != std::this_thread::get_id()) {
            lock.unlock();
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            parking::park(this, [&] { return running_.load(std::memory_order_seq_cst) != id; });
            sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        }
        return false;
    }

    /// Fires once; later calls do nothing. Callbacks run on this thread, in
    /// the order they were registered, one at a time so that `remove` can
    /// tell which one runs; one that throws is logged and the others still
    /// run.
    void cancel() {
        if (cancelled_.exchange(true, std::memory_order_seq_cst)) return;
        // Most attempts registered nothing and made no list: no lock. Both
        // sides store, then load the other's flag (seq_cst), so a callback
        // or list made meanwhile is seen here, or sees cancelled_ itself.
        if (!used_.load(std::memory_order_seq_cst)) return;
        std::shared_ptr<WaitList> waits;  // a list made after this sees cancelled_
        std::function<void()> callback;
        {
            std::lock_guard lock(mu_);
            waits = waits_;
            runner_ = std::this_thread::get_id();
            take_next(callback);  // most attempts registered none: no second lock
        }
        while (callback) {
            try {
                callback();
            } catch (...) {
                log_contained_exception("an on_cancel callback");
            }
            callback = nullptr;
            running_.store(0, std::memory_order_seq_cst);
            if (sleepers_.load(std::memory_order_seq_cst) > 0) parking::unpark(this);
            std::lock_guard lock(mu_);
            take_next(callback);
        }
        if (waits) waits->set();
    }

    /// Made on first use: most attempts never await their cancellation.
    std::shared_ptr<WaitList> waits() {
        std::lock_guard lock(mu_);
        if (!waits_) {
            waits_ = WaitList::create();
            used_.store(true, std::memory_order_seq_cst);  // see cancel()
            if (cancelled_.load(std::memory_order_seq_cst)) waits_->set();
        }
        return waits_;
    }

private:
    // Under `mu_`: the next callback to run, if any, marked as running.
    void take_next(std::function<void()>& callback) {
        if (callbacks_.empty()) return;
        running_.store(callbacks_.front().first, std::memory_order_seq_cst);
        callback = std::move(callbacks_.front().second);
        callbacks_.erase(callbacks_.begin());
    }

    std::atomic<bool> cancelled_{false};
    std::atomic<bool> used_{false};  // a callback was registered or the list made
    std::mutex mu_;
    std::uint64_t next_id_ = 0;
    // The callback `cancel` runs now, 0 if none; written under `mu_`. A
    // `remove` waiting for it to return parks (parking.hpp), counted in
    // `sleepers_`.
    std::atomic<std::uint64_t> running_{0};
    std::atomic<std::uint32_t> sleepers_{0};
    std::thread::id runner_;     // the thread that cancelled
    // A vector, not a deque: every attempt has this state, most register
    // nothing, and an empty vector allocates nothing.
    std::vector<std::pair<std::uint64_t, std::function<void()>>> callbacks_;
    std::shared_ptr<WaitList> waits_;  // guarded by mu_
};

}  // namespace cronoq::detail
