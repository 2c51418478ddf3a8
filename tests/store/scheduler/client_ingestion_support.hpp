#pragma once
// What the tests of a leader's ingestion share (client_ingestion_test.cpp,
// client_ingestion_crash_test.cpp): rows written as a client writes them,
// waits on the store's change watch, and a pool that counts its runs.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>
#include <cronoq/store/client_access.hpp>

#include "driver/task_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::test {

/// A row as a client commits it: options as the driver encodes them.
inline store::TaskRow client_row(const std::string& payload, const std::string& pool,
                                 std::optional<std::string> key = {}, detail::TaskRequest request = {}) {
    store::TaskRow row;
    row.key = std::move(key);
    row.pool = pool;
    row.status = TaskStatus::Ready;
    row.submitted_at = row.updated_at = std::chrono::system_clock::now();
    row.options = detail::encode_options(request, row.submitted_at);
    row.payload = payload;
    return row;
}

/// Waits (through the store's change watch; a minute is only a guard
/// against a hang) until every task of `ids` has a committed end.
inline std::map<std::uint64_t, TaskStatus> wait_ended(store::ClientAccess& access, const std::vector<TaskId>& ids) {
    auto watch = access.watch();
    const auto guard = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        auto ended = access.ended(ids);
        if (ended.size() == ids.size() || std::chrono::steady_clock::now() > guard) {
            std::map<std::uint64_t, TaskStatus> out;
            for (const auto& [id, status] : ended) out[id.value] = status;
            return out;
        }
        watch->wait(std::chrono::milliseconds(200));
    }
}

inline std::set<std::uint64_t> inbox_tasks(Store& store) {
    std::set<std::uint64_t> out;
    for (const store::InboxEntry& e : store.journal().read_inbox(1000)) out.insert(e.task.value);
    return out;
}

/// What a `counted_pool`'s attempts ran: their payloads in order and how
/// often each.
struct Runs {
    std::mutex mu;
    std::vector<std::string> order;
    std::map<std::string, int> count;
    std::promise<void> first_started;
    bool started = false;

    void ran(const std::string& payload) {
        std::lock_guard lock(mu);
        order.push_back(payload);
        ++count[payload];
        if (!started) first_started.set_value();
        started = true;
    }
};

/// Pool `name` whose attempts count their runs by payload, wait for `gate`
/// (on the blocking pool), and answer "<payload>!".
inline Pool<std::string, std::string> counted_pool(std::string name, std::shared_ptr<Runs> runs,
                                                   std::shared_future<void> gate, std::size_t workers = 1) {
    return Pool<std::string, std::string>(std::move(name))
        .workers(workers, workers, workers)
        .executor_fn([runs, gate](TaskContext, std::shared_ptr<const std::string> s) -> Result<std::string> {
            runs->ran(*s);
            gate.wait();
            return *s + "!";
        });
}

inline std::shared_future<void> open_gate() {
    std::promise<void> p;
    p.set_value();
    return p.get_future().share();
}

}  // namespace cronoq::test
