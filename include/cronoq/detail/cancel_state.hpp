#pragma once
// The shared state behind a CancellationToken and TaskContext::cancelled().
#include <cronoq/detail/wait_list.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace cronoq::detail {

/// Logs the exception being handled, thrown by `what` (a cancellation
/// callback): cancellation goes on past a throwing callback.
void log_contained_exception(const char* what) noexcept;

class CancelState {
public:
    bool is_cancelled() const { return cancelled_.load(std::memory_order_acquire); }

    void on_cancel(std::function<void()> callback) {
        {
            std::lock_guard lock(mu_);
            if (!cancelled_.load(std::memory_order_relaxed)) {
                callbacks_.push_back(std::move(callback));
                return;
            }
        }
        callback();
    }

    /// Fires once; later calls do nothing. Callbacks run on this thread; one
    /// that throws is logged and the others still run.
    void cancel() {
        std::vector<std::function<void()>> callbacks;
        std::shared_ptr<WaitList> waits;  // a list made after this sees cancelled_
        {
            std::lock_guard lock(mu_);
            if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
            callbacks.swap(callbacks_);
            waits = waits_;
        }
        for (auto& cb : callbacks) {
            try {
                cb();
            } catch (...) {
                log_contained_exception("an on_cancel callback");
            }
        }
        if (waits) waits->set();
    }

    /// Made on first use: most attempts never await their cancellation.
    std::shared_ptr<WaitList> waits() {
        std::lock_guard lock(mu_);
        if (!waits_) {
            waits_ = WaitList::create();
            if (cancelled_.load(std::memory_order_relaxed)) waits_->set();
        }
        return waits_;
    }

private:
    std::atomic<bool> cancelled_{false};
    std::mutex mu_;
    std::vector<std::function<void()>> callbacks_;
    std::shared_ptr<WaitList> waits_;  // guarded by mu_
};

}  // namespace cronoq::detail
