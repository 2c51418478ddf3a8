// A worker in another language: python_worker.py (Debian's python3-grpcio,
// stubs generated from cronoq-worker-proto's output at build time) against
// the C++ server of a real scheduler, next to a C++ worker.
#include "remote_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/codec.hpp>
#include <cronoq/remote/worker_server.hpp>

#include <gtest/gtest.h>

namespace cronoq::test::python_worker_test {
namespace {

using namespace std::chrono_literals;
using Sched = BlockingScheduler<std::string, std::string>;

TEST(PythonWorker, CompletesFailsAndNacksForARealScheduler) {
    auto sched = Sched::builder()
                     .threads(2)
                     .pool(Pool<std::string, std::string>("work").remote().retry(RetryPolicy{2, 10ms, 1.0, 10ms, false}))
                     .build();
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"secret"};
    auto scheduler = sched.scheduler();
    std::optional<WorkerServer> server(WorkerServer::start(scheduler, config));
    const std::string target = "127.0.0.1:" + std::to_string(server->port());
    Child python("/usr/bin/python3", {CRONOQ_TEST_PYTHON_WORKER, target, "secret", "work"},
                 {std::string("PYTHONPATH=") + CRONOQ_TEST_PYTHONPATH});
    const auto registered = python.read_until("R ");
    ASSERT_TRUE(registered) << "the Python worker did not register (python3-grpcio, python3-protobuf installed?)";
    EXPECT_EQ(registered->substr(registered->rfind(' ')), " 4");
    Child cpp({"worker", "target=" + target, "token=secret", "name=w2", "slots=2", "label=name:w2"});

    // Labelled lang=python: only the Python worker (registered with it) runs these.
    const auto on_python = [&](std::string payload) {
        return sched.submit(Task<std::string>(std::move(payload)).pool("work").label("lang", "python"));
    };
    auto echo = on_python("echo:from python");
    auto flaky = on_python("fail:try again");
    auto broken = on_python("permanent:bad input");
    EXPECT_EQ(*echo.get(), "from python");
    auto f = failure_of(flaky);
    EXPECT_EQ(f.status(), TaskStatus::DeadLettered);
    EXPECT_EQ(f.attempt(), 2u);
    EXPECT_EQ(f.message(), "try again");
    f = failure_of(broken);
    EXPECT_EQ(f.status(), TaskStatus::Failed);
    EXPECT_EQ(f.message(), "bad input");

    // The C++ worker's two slots held: the next task can only go to Python,
    // which nacks it; it waits for the C++ worker, without counting an attempt.
    std::vector<BlockingHandle<std::string>> held;
    for (int i = 0; i < 2; ++i)
        held.push_back(sched.submit(Task<std::string>("block").pool("work").label("name", "w2")));
    ASSERT_TRUE(cpp.read_until("S "));
    ASSERT_TRUE(cpp.read_until("S "));
    auto nacked = sched.submit(Task<std::string>("reject_on:python").pool("work"));
    EXPECT_EQ(python.read_until("N "), "N " + std::to_string(nacked.id().value));
    EXPECT_TRUE(held[0].cancel());
    EXPECT_EQ(*nacked.get(), "w2 attempt=1");
    EXPECT_TRUE(held[1].cancel());
    for (auto& h : held) EXPECT_EQ(failure_of(h).status(), TaskStatus::Cancelled);

    server.reset();  // shutdown{"server stopping"}, then the stream's end
    EXPECT_EQ(python.read_until("E "), "E OK");
    EXPECT_EQ(python.wait(), 0);
}

TEST(PythonWorker, FollowsARedirectToTheLeader) {
    auto sched = Sched::builder().threads(2).pool(Pool<std::string, std::string>("work").remote()).build();
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"secret"};
    auto scheduler = sched.scheduler();
    std::optional<WorkerServer> leader(WorkerServer::start(scheduler, config));
    const std::string leader_endpoint = "http://127.0.0.1:" + std::to_string(leader->port());
    // A process that does not lead: it refuses with a redirect to the leader.
    auto standby_host = std::make_shared<RecordingHost>();
    standby_host->refuse_with = detail::ConnectRefused{detail::ConnectRefused::Kind::NotLeader,
                                                       "this process does not lead the store", "default",
                                                       leader_endpoint};
    WorkerServer standby = WorkerServer::start_for_host(standby_host, config);
    Child python("/usr/bin/python3",
                 {CRONOQ_TEST_PYTHON_WORKER, "127.0.0.1:" + std::to_string(standby.port()), "secret", "work"},
                 {std::string("PYTHONPATH=") + CRONOQ_TEST_PYTHONPATH});
    EXPECT_EQ(python.read_until("D "), "D " + leader_endpoint);
    ASSERT_TRUE(python.read_until("R "));
    EXPECT_EQ(*sched.submit(Task<std::string>("echo:via the leader").pool("work")).get(), "via the leader");
    leader.reset();
    EXPECT_EQ(python.read_until("E "), "E OK");
}

}  // namespace
}  // namespace cronoq::test::python_worker_test
