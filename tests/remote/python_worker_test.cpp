// A worker in another language: python_worker.py (Debian's python3-grpcio,
// stubs generated from cronoq-worker-proto's output at build time) against
// the C++ server.
#include "remote_support.hpp"

#include <cronoq/remote/worker_server.hpp>

#include <gtest/gtest.h>

namespace cronoq::test {
namespace {

using R = detail::RemoteReport;

TEST(PythonWorker, CompletesFailsAndNacks) {
    auto host = std::make_shared<RecordingHost>();
    WorkerServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tokens = {"secret"};
    auto server = WorkerServer::start_for_host(host, config);
    Child worker("/usr/bin/python3",
                 {CRONOQ_TEST_PYTHON_WORKER, "127.0.0.1:" + std::to_string(server.port()), "secret", "work"},
                 {std::string("PYTHONPATH=") + CRONOQ_TEST_PYTHONPATH});
    const auto registered = worker.read_until("R ");
    ASSERT_TRUE(registered) << "the Python worker did not register (python3-grpcio, python3-protobuf installed?)";
    ASSERT_TRUE(host->wait([&] { return !host->connected.empty(); }));
    {
        auto lock = host->lock();
        EXPECT_EQ(*registered, "R " + std::to_string(host->connected[0].id.value) + " 4");
        EXPECT_EQ(host->connected[0].registration.name, "python");
        EXPECT_EQ(host->connected[0].registration.labels.at("lang"), "python");
    }
    host->send_lease(0, 1, "echo:from python");
    host->send_lease(0, 2, "fail:try again");
    host->send_lease(0, 3, "permanent:bad input");
    host->send_lease(0, 4, "reject:not here");
    ASSERT_TRUE(host->wait([&] {
        for (std::uint64_t l = 1; l <= 4; ++l)
            if (!host->end_report(LeaseId{l})) return false;
        return true;
    }));
    {
        auto lock = host->lock();
        const auto end = [&](std::uint64_t l) { return host->end_report(LeaseId{l})->what; };
        ASSERT_TRUE(std::holds_alternative<R::Complete>(end(1)));
        EXPECT_EQ(std::get<R::Complete>(end(1)).output, "from python");
        ASSERT_TRUE(std::holds_alternative<R::Fail>(end(2)));
        EXPECT_EQ(std::get<R::Fail>(end(2)).message, "try again");
        EXPECT_FALSE(std::get<R::Fail>(end(2)).permanent);
        ASSERT_TRUE(std::holds_alternative<R::Fail>(end(3)));
        EXPECT_TRUE(std::get<R::Fail>(end(3)).permanent);
        ASSERT_TRUE(std::holds_alternative<R::Nack>(end(4)));
        EXPECT_EQ(std::get<R::Nack>(end(4)).reason, "not here");
        for (std::uint64_t l = 1; l <= 4; ++l) EXPECT_EQ(host->count<R::Heartbeat>(LeaseId{l}), 1u);
    }
    server.stop();  // shutdown{"server stopping"}, then the stream's end
    EXPECT_EQ(worker.read_until("E "), "E OK");
    EXPECT_EQ(worker.wait(), 0);
}

}  // namespace
}  // namespace cronoq::test
