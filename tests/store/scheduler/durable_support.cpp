#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <iostream>
#include <sstream>

namespace cronoq::test {

Pool<std::string, std::string> identity_pool(std::string name) {
    return Pool<std::string, std::string>(std::move(name))
        .executor_fn([](TaskContext, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            co_return *s;
        });
}

Pool<std::string, std::string> gated_pool(std::shared_future<void> gate, std::size_t workers) {
    return Pool<std::string, std::string>("p").workers(workers, workers, workers).executor_fn(
        [gate](TaskContext ctx, std::shared_ptr<const std::string> s) -> asio::awaitable<Result<std::string>> {
            auto wait = offload(ctx, [gate] { gate.wait(); });
            co_await std::move(wait);
            co_return *s + "!";
        });
}

void Acks::note(const std::string& line) {
    std::istringstream in(line);
    char tag = 0;
    std::uint64_t id = 0;
    std::string key;
    if (line.rfind("X ", 0) == 0) stop = line;
    if (in >> tag >> id >> key && tag == 'A') by_id[id] = key;
}

void Acks::read(Child& child, std::size_t at_least) {
    while (by_id.size() < at_least) {
        auto line = child.read_line();
        ASSERT_TRUE(line.has_value()) << "the leader stopped early";
        note(*line);
    }
}

void expect_fenced_and_nothing_lost(Child& leader, Acks& acks, const std::string& location,
                                    const std::map<std::uint64_t, std::tuple<TaskStatus, std::uint32_t, std::int64_t>>& at_takeover,
                                    std::promise<void>& gate, Durable& sched) {
    using namespace std::chrono_literals;
    while (!acks.stop) {
        auto line = leader.read_line();
        ASSERT_TRUE(line.has_value()) << "the old leader did not stop";
        acks.note(*line);
    }
    EXPECT_EQ(leader.wait(), 3);
    std::cout << "the old leader stopped: " << *acks.stop << "\n";
    EXPECT_NE(acks.stop->find("leads: no"), std::string::npos) << *acks.stop;
    EXPECT_EQ(task_rows(location), at_takeover) << "the fenced leader wrote after the takeover";

    gate.set_value();
    for (const auto& [id, key] : acks.by_id) {
        auto h = sched.find(TaskRef(TaskId{id}));
        ASSERT_TRUE(h.has_value()) << "acknowledged task " << id << " is lost";
        EXPECT_EQ(*h->get(), key + "!");
    }
    sched.shutdown(0s);
}

Standby::Standby(const std::string& location, Pool<std::string, std::string> pool) {
    thread = std::thread([this, location, pool = std::move(pool)]() mutable {
        try {
            sched.emplace(Durable::builder().threads(2).pool(std::move(pool)).store(open_location(location)).open());
            opened.set_value();
        } catch (...) {
            opened.set_exception(std::current_exception());
        }
    });
}

Standby::~Standby() { thread.join(); }

}  // namespace cronoq::test
