// A scheduler with a store killed at random points (docs/guide/durability.md), on each
// backend: a child process submits with submit() and reports each
// acknowledged task; the parent SIGKILLs it, opens the store itself and
// runs everything to the end.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace std::chrono_literals;
using namespace cronoq;

namespace cronoq::test {

namespace {

/// Appends `line` to `file` and syncs it: a side effect that survives the
/// SIGKILL that may follow.
void record_side_effect(const std::string& file, const std::string& line) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("cannot open " + file);
    const std::string out = line + "\n";
    const bool ok = ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()) && ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) throw std::runtime_error("cannot write " + file);
}

/// Records the payload as its side effect, stays running a moment (so that
/// a kill finds attempts running), and answers "<payload>!".
Pool<std::string, std::string> side_effect_pool(std::string side_effects) {
    return Pool<std::string, std::string>("p")
        .workers(4, 4, 4)
        .retry(RetryPolicy{5, 1ms, 1.0, 1ms, false})
        .executor_fn([side_effects](TaskContext, std::shared_ptr<const std::string> s)
                         -> asio::awaitable<Result<std::string>> {
            record_side_effect(side_effects, *s);
            asio::steady_timer pause(co_await asio::this_coro::executor, 2ms);
            co_await pause.async_wait(asio::use_awaitable);
            co_return *s + "!";
        });
}

}  // namespace

/// `--child submit <location> <side effect file> <count>`: leads, then
/// submits tasks "t0".. (keyed by their payload) one at a time with
/// submit(), writing "A <id> <key>" once each is acknowledged.
int child_main(int argc, char** argv) {
    if (argc >= 3 && std::string(argv[2]) == "lead") return lead_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "random") return random_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "recurring") return recurring_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "client-submit") return client_submit_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "client-leader") return client_leader_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "shard-leader") return shard_leader_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "ingest-cancel") return ingest_cancel_child_main(argc, argv);
    if (argc >= 3 && std::string(argv[2]) == "ingest-leader") return ingest_leader_child_main(argc, argv);
    if (argc != 6 || std::string(argv[2]) != "submit") return 2;
    auto sched = Durable::builder().threads(1).pool(side_effect_pool(argv[4])).store(open_location(argv[3])).open();
    say("R");
    const int count = std::stoi(argv[5]);
    for (int i = 0; i < count; ++i) {
        const std::string key = "t" + std::to_string(i);
        auto h = sched.submit(Task<std::string>(key).key(key));
        say("A " + std::to_string(h.id().value) + " " + key);
    }
    say("D");
    return 0;
}

}  // namespace cronoq::test

namespace {

class Crash : public ::testing::TestWithParam<std::tuple<test::Backend, unsigned>> {};

std::multiset<std::string> lines_of(const std::filesystem::path& file) {
    std::multiset<std::string> lines;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.insert(line);
    return lines;
}

}  // namespace

TEST_P(Crash, EveryAcknowledgedTaskEndsOnceAfterASigkill) {
    test::TestStore at(std::get<0>(GetParam()));
    const auto side_effects = at.dir().file("side_effects.txt");
    std::mt19937 random(std::get<1>(GetParam()));
    const int kill_after = std::uniform_int_distribution<int>(1, 120)(random);

    std::map<std::uint64_t, std::string> acknowledged;  // id -> key
    {
        test::Child child({"submit", at.location(), side_effects.string(), "400"});
        ASSERT_EQ(child.read_line(), "R");
        while (static_cast<int>(acknowledged.size()) < kill_after) {
            auto line = child.read_line();
            ASSERT_TRUE(line.has_value()) << "the child stopped early";
            std::istringstream in(*line);
            char tag = 0;
            std::uint64_t id = 0;
            std::string key;
            in >> tag >> id >> key;
            ASSERT_EQ(tag, 'A') << *line;
            acknowledged[id] = key;
        }
        child.signal(SIGKILL);
        // What it wrote before dying was acknowledged too.
        while (auto line = child.read_line(5s)) {
            std::istringstream in(*line);
            char tag = 0;
            std::uint64_t id = 0;
            std::string key;
            if (in >> tag >> id >> key && tag == 'A') acknowledged[id] = key;
        }
        EXPECT_EQ(child.wait(), 128 + SIGKILL);
    }

    auto store = at.open();
    auto sched = test::Durable::builder()
                     .threads(2)
                     .pool(test::side_effect_pool(side_effects.string()))
                     .store(store)
                     .open();
    std::uint64_t largest = 0;
    for (const auto& [id, key] : acknowledged) {
        largest = std::max(largest, id);
        auto h = sched.find(TaskRef(TaskId{id}));
        ASSERT_TRUE(h.has_value()) << "acknowledged task " << id << " (" << key << ") is lost";
        EXPECT_EQ(*h->get(), key + "!");
    }
    // Tasks the child admitted but was killed before acknowledging end too.
    for (TaskStatus s : {TaskStatus::Ready, TaskStatus::Running, TaskStatus::Retrying}) {
        for (const StoredTask& row : store->list(s, 1000)) {
            auto h = sched.find(TaskRef(row.id));
            ASSERT_TRUE(h.has_value()) << row.id.value;
            EXPECT_EQ(*h->get(), row.payload + "!");
        }
    }
    sched.flush();
    const auto effects = lines_of(side_effects);
    for (const auto& [id, key] : acknowledged) {
        const auto row = store->get_task(TaskRef(TaskId{id}));
        ASSERT_TRUE(row.has_value());
        EXPECT_EQ(row->status, TaskStatus::Succeeded) << id;
        EXPECT_EQ(row->output, key + "!");
        EXPECT_EQ(row->key, key);
        EXPECT_GE(effects.count(key), 1u) << "no side effect for " << key;
        // Keys still deduplicate after the restart.
        EXPECT_EQ(sched.submit(Task<std::string>("other").key(key)).id().value, id);
    }
    for (TaskStatus s : {TaskStatus::Ready, TaskStatus::Running, TaskStatus::Retrying, TaskStatus::Scheduled,
                         TaskStatus::Blocked})
        EXPECT_TRUE(store->list(s, 10).empty()) << "a task is left " << to_string(s);
    // Ids stay unique across the restart.
    EXPECT_GT(sched.submit(Task<std::string>("new")).id().value, largest);
}

INSTANTIATE_TEST_SUITE_P(Stores, Crash,
                         ::testing::Combine(::testing::ValuesIn(test::tested_backends()), ::testing::Values(1u, 2u, 3u, 4u)),
                         test::BackendSeedName{});
