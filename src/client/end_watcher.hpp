#pragma once
// A client's one watcher (docs/guide/replicas.md, "Results"): a thread that
// waits on the store's ChangeWatch (SQLite: a poll of the file's data
// version; PostgreSQL: the leader's notification) and then reads, in ONE
// `ClientAccess::ended` call, which of the awaited tasks have a committed
// end, whatever the number of handles awaiting them.
#include <cronoq/detail/client_core.hpp>
#include <cronoq/store/client_access.hpp>
#include <cronoq/store/store.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace cronoq::detail {

class EndWatcher {
public:
    /// Starts the thread, which sleeps while nothing is awaited. The store
    /// must outlive the watcher.
    EndWatcher(Store& store, store::ClientAccess& access);
    /// Stops and joins the thread (detaches it if called on it).
    ~EndWatcher();
    EndWatcher(const EndWatcher&) = delete;
    EndWatcher& operator=(const EndWatcher&) = delete;

    /// A wait for `id`'s end, looked up at once (an end already committed
    /// finishes it at the watcher's next look).
    std::shared_ptr<EndWait> await(TaskId id);
    void forget(const std::shared_ptr<EndWait>& wait);

    /// The longest the watcher waits for the ChangeWatch before it looks
    /// anyway: the safety net under a missed notification.
    static constexpr std::chrono::milliseconds safety_poll{500};

private:
    void loop();
    void look();
    ClientEnd end_of(TaskId id, TaskStatus status);

    Store& store_;
    store::ClientAccess& access_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::unordered_multimap<std::uint64_t, std::shared_ptr<EndWait>> waits_;
    bool look_now_ = false;
    bool stopping_ = false;
    std::unique_ptr<store::ChangeWatch> watch_;  // made on the thread; set under mu_
    std::thread thread_;
};

}  // namespace cronoq::detail
