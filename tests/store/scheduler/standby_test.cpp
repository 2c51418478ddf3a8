// Schedulers standing by for one another on one store (SPEC §14 "Leader,
// standbys, fencing"), with real processes: a child leads and submits, the
// test process waits in open() as the standby. A leader killed with
// SIGKILL is taken over once its lease runs out and the standby finishes
// every acknowledged task; a leader frozen with SIGSTOP is overtaken, and
// woken, it is fenced, stops, and writes nothing after the takeover.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <future>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace cronoq;

namespace cronoq::test {

namespace {

/// Each attempt takes a few milliseconds, so that a leader killed or
/// frozen has attempts running; "<payload>!".
Pool<std::string, std::string> slow_pool() {
    return Pool<std::string, std::string>("p").workers(2, 2, 2).executor_fn(
        [](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            asio::steady_timer pause(co_await asio::this_coro::executor, 5ms);
            co_await pause.async_wait(asio::use_awaitable);
            co_return *s + "!";
        });
}

}  // namespace

/// `--child lead <store file> <pace ms>`: leads, then submits "t0", "t1"..
/// (keyed by their payload) one at a time with submit(), a pause between
/// two, writing "A <id> <key>" once each is acknowledged, until a
/// submission fails: then "X ..." and exit status 3.
int lead_child_main(int argc, char** argv) {
    if (argc != 5) return 2;
    auto sched = Durable::builder().threads(1).pool(slow_pool()).store(open_store(argv[3])).open();
    say("R");
    const auto pace = std::chrono::milliseconds(std::stoi(argv[4]));
    for (int i = 0;; ++i) {
        const std::string key = "t" + std::to_string(i);
        try {
            auto h = sched.submit(Task<std::string>(key).key(key));
            say("A " + std::to_string(h.id().value) + " " + key);
        } catch (...) {
            // Not read: the exception crossed from an io thread through a
            // future, and ThreadSanitizer cannot see libstdc++'s atomic
            // reference count that keeps it alive (a false data race between
            // this thread's read and that thread's release).
            say("X the submission failed");
            return 3;
        }
        std::this_thread::sleep_for(pace);
    }
}

}  // namespace cronoq::test

namespace {

using test::Durable;

/// The child's acknowledgements, from its lines.
struct Acks {
    std::map<std::uint64_t, std::string> by_id;  // id -> key
    std::optional<std::string> stop;             // its "X" line

    void note(const std::string& line) {
        std::istringstream in(line);
        char tag = 0;
        std::uint64_t id = 0;
        std::string key;
        if (line.rfind("X ", 0) == 0) stop = line;
        if (in >> tag >> id >> key && tag == 'A') by_id[id] = key;
    }
    void read(test::Child& child, std::size_t at_least) {
        while (by_id.size() < at_least) {
            auto line = child.read_line();
            ASSERT_TRUE(line.has_value()) << "the leader stopped early";
            note(*line);
        }
    }
};

/// The standby: the test process waiting in open() on its own thread.
struct Standby {
    std::optional<Durable> sched;
    std::promise<void> opened;
    std::future<void> led = opened.get_future();
    std::thread thread;

    Standby(const std::filesystem::path& file, Pool<std::string, std::string> pool) {
        thread = std::thread([this, file, pool = std::move(pool)]() mutable {
            try {
                sched.emplace(Durable::builder().threads(2).pool(std::move(pool)).store(test::open_store(file)).open());
                opened.set_value();
            } catch (...) {
                opened.set_exception(std::current_exception());
            }
        });
    }
    ~Standby() { thread.join(); }
};

/// Every task row: id -> (status, attempt, updated_at).
std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>> rows(const std::filesystem::path& file) {
    auto store = test::open_store(file);
    std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>> out;
    for (int s = 0; s <= static_cast<int>(TaskStatus::Shed); ++s)
        for (const StoredTask& t : store->list(static_cast<TaskStatus>(s), 1'000'000))
            out[t.id.value] = {t.status, t.attempt, t.updated_at.time_since_epoch().count()};
    return out;
}

}  // namespace

TEST(StandbyScheduler, TakesOverAfterTheLeaderIsKilledAndFinishesEveryAcknowledgedTask) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    test::Child leader({"lead", file.string(), "1"});
    ASSERT_EQ(leader.read_line(), "R");
    Standby standby(file, test::slow_pool());
    Acks acks;
    acks.read(leader, 40);
    const auto killed_at = std::chrono::steady_clock::now();
    leader.signal(SIGKILL);
    while (auto line = leader.read_line(5s)) acks.note(*line);  // written before it died
    EXPECT_EQ(leader.wait(), 128 + SIGKILL);

    standby.led.get();  // rethrows what open() threw
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at);
    std::cout << "the standby led " << waited.count() << " ms after the SIGKILL (lease " << test::test_lease.count()
              << " ms); " << acks.by_id.size() << " acknowledged tasks\n";
    Durable& sched = *standby.sched;
    for (const auto& [id, key] : acks.by_id) {
        auto h = sched.find(TaskRef(TaskId{id}));
        ASSERT_TRUE(h.has_value()) << "acknowledged task " << id << " is lost";
        EXPECT_EQ(*h->get(), key + "!");
    }
    sched.flush();
    auto store = test::open_store(file);
    for (const auto& [id, key] : acks.by_id) EXPECT_EQ(store->get_task(TaskRef(TaskId{id}))->status, TaskStatus::Succeeded);
    sched.shutdown(0s);
}

TEST(StandbyScheduler, AFrozenLeaderIsFencedWhenItWakesAndWritesNothingAfterTheTakeover) {
    test::ScratchDir dir;
    const auto file = dir.file("s.db");
    // Paced, so that the leader is mostly outside a transaction: one frozen
    // inside its commit holds the file's write lock, and no standby can take
    // over until it wakes (SPEC §14), so such a freeze is tried again.
    test::Child leader({"lead", file.string(), "20"});
    ASSERT_EQ(leader.read_line(), "R");
    // The standby's attempts wait for the gate, so that it changes nothing
    // of what it took over while the old leader wakes.
    std::promise<void> gate;
    std::shared_future<void> gate_open = gate.get_future().share();
    Standby standby(file, test::gated_pool(gate_open, 2));
    Acks acks;
    acks.read(leader, 5);
    bool led = false;
    for (int tries = 0; tries < 20 && !led; ++tries) {
        leader.signal(SIGSTOP);
        // The lease (600 ms) runs out first; a longer wait means the leader
        // froze inside a transaction.
        led = standby.led.wait_for(3s) == std::future_status::ready;
        if (!led) {
            leader.signal(SIGCONT);
            std::this_thread::sleep_for(7ms);  // out of that transaction
        }
    }
    ASSERT_TRUE(led) << "the standby never led";
    standby.led.get();
    Durable& sched = *standby.sched;
    sched.flush();  // its recovery's changes
    const auto at_takeover = rows(file);

    leader.signal(SIGCONT);
    while (!acks.stop) {
        auto line = leader.read_line();
        ASSERT_TRUE(line.has_value()) << "the old leader did not stop";
        acks.note(*line);
    }
    EXPECT_EQ(leader.wait(), 3);
    std::cout << "the old leader stopped: " << *acks.stop << "\n";
    EXPECT_EQ(rows(file), at_takeover) << "the fenced leader wrote after the takeover";

    gate.set_value();
    for (const auto& [id, key] : acks.by_id) {
        auto h = sched.find(TaskRef(TaskId{id}));
        ASSERT_TRUE(h.has_value()) << "acknowledged task " << id << " is lost";
        EXPECT_EQ(*h->get(), key + "!");
    }
    sched.shutdown(0s);
}
