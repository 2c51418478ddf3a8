// BM_GrpcEchoBaseline: the floor of BM_RemoteThroughput, measured in the
// same binary. One bidirectional stream of the worker protocol's service
// (cronoq.v1.Workers/Work) on loopback, served and called with the same
// gRPC API as the worker server and RemoteWorker (the callback reactors,
// gRPC's own threads, one write in flight per side): the client keeps up to
// 64 `complete`-sized messages in flight and the server answers each with a
// `lease`-sized one. No scheduler, no engine, no worker loop: what is left
// is the transport. `round_trips_per_s` is the figure; divide
// BM_RemoteThroughput's `tasks_per_s` by it. `cpu_us_per_round_trip`: the
// CPU of both ends (one process here), every thread, per round trip; the
// floor of BM_RemoteThroughput's `cpu_us_per_task`.
#include "bench_support.hpp"
#include "cpu_time.hpp"

#include "cronoq/v1/workers.grpc.pb.h"

#include <benchmark/benchmark.h>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>

namespace {

using namespace std::chrono_literals;

constexpr int echo_batch = 10000;   // round trips per iteration batch, as BM_RemoteThroughput's tasks
constexpr int echo_in_flight = 64;  // the bench worker's slots
constexpr auto echo_hang_limit = 120s;

/// A lease as the scheduler sends one of BM_RemoteThroughput's tasks.
cronoq::v1::ServerMessage lease_message(std::uint64_t n) {
    cronoq::v1::ServerMessage m;
    auto& l = *m.mutable_lease();
    l.set_lease(n + 1);
    l.set_task_id(n + 1);
    l.set_attempt(1);
    l.set_pool("bench");
    l.set_payload(std::to_string(n));
    l.set_content_type("application/json");
    return m;
}

/// A complete as the bench worker answers one.
cronoq::v1::WorkerMessage complete_message(std::uint64_t n) {
    cronoq::v1::WorkerMessage m;
    m.mutable_complete()->set_lease(n + 1);
    m.mutable_complete()->set_output(std::to_string(n));
    return m;
}

/// Writes in order, one write in flight; the queue's front is in flight.
/// `close` asks for the end of the writes (the client's WritesDone), which
/// waits for the write in flight.
template <class Message>
class WriteQueue {
public:
    enum class Next { None, Write, Close };
    Next push(Message m) {
        std::lock_guard lock(mu_);
        queue_.push_back(std::move(m));
        return std::exchange(busy_, true) ? Next::None : Next::Write;
    }
    /// After a write completed.
    Next pop() {
        std::lock_guard lock(mu_);
        queue_.pop_front();
        if (!queue_.empty()) return Next::Write;
        busy_ = close_wanted_;
        return close_wanted_ ? Next::Close : Next::None;
    }
    Next close() {
        std::lock_guard lock(mu_);
        close_wanted_ = true;
        return std::exchange(busy_, true) ? Next::None : Next::Close;
    }
    const Message* front() {
        std::lock_guard lock(mu_);
        return &queue_.front();
    }

private:
    std::mutex mu_;
    std::deque<Message> queue_;
    bool busy_ = false;  // a write (or the close) in flight
    bool close_wanted_ = false;
};

class EchoReactor final : public grpc::ServerBidiReactor<cronoq::v1::WorkerMessage, cronoq::v1::ServerMessage> {
    using Next = WriteQueue<cronoq::v1::ServerMessage>::Next;

public:
    EchoReactor() { StartRead(&in_); }
    void OnReadDone(bool ok) override {
        if (!ok) {
            Finish(grpc::Status::OK);
            return;
        }
        if (out_.push(lease_message(in_.complete().lease() - 1)) == Next::Write) StartWrite(out_.front());
        StartRead(&in_);
    }
    void OnWriteDone(bool ok) override {
        if (ok && out_.pop() == Next::Write) StartWrite(out_.front());
    }
    void OnDone() override { delete this; }

private:
    cronoq::v1::WorkerMessage in_;
    WriteQueue<cronoq::v1::ServerMessage> out_;
};

class EchoService final : public cronoq::v1::Workers::CallbackService {
    grpc::ServerBidiReactor<cronoq::v1::WorkerMessage, cronoq::v1::ServerMessage>* Work(
        grpc::CallbackServerContext*) override {
        return new EchoReactor;
    }
};

/// One stream: `total` round trips, at most `echo_in_flight` at once. It
/// deletes itself when the call is done, after handing over the sum.
class EchoClient final : public grpc::ClientBidiReactor<cronoq::v1::WorkerMessage, cronoq::v1::ServerMessage> {
    using Next = WriteQueue<cronoq::v1::WorkerMessage>::Next;

public:
    static std::future<std::int64_t> start(cronoq::v1::Workers::Stub& stub, int total) {
        auto* client = new EchoClient(total);
        auto result = client->done_.get_future();
        stub.async()->Work(&client->context_, client);
        Next next = Next::None;
        for (int i = 0; i < echo_in_flight && i < total; ++i)
            if (client->out_.push(complete_message(client->sent_++)) == Next::Write) next = Next::Write;
        client->run(next);
        client->StartRead(&client->in_);
        client->StartCall();
        return result;
    }
    void OnReadDone(bool ok) override {
        if (!ok) return;
        sum_ += static_cast<std::int64_t>(in_.lease().task_id() - 1);
        if (++received_ == total_) {
            run(out_.close());
            return;
        }
        if (sent_ < static_cast<std::uint64_t>(total_)) run(out_.push(complete_message(sent_++)));
        StartRead(&in_);
    }
    void OnWriteDone(bool ok) override {
        if (ok) run(out_.pop());
    }
    void OnDone(const grpc::Status& status) override {
        // The waiting thread may drop the stub and the channel as soon as
        // the promise is set, and this reactor's ClientContext holds a
        // reference to the channel too: set after `delete this`, so that
        // the channel's last reference goes on the benchmark's thread and
        // never on gRPC's callback thread, which would tear the channel
        // and its callback queue down under its own feet, racing gRPC's
        // shutdown (the rare abort `ref_counted.h:183 prior > 0` after
        // this benchmark).
        std::promise<std::int64_t> done = std::move(done_);
        const bool complete = status.ok() && received_ == total_;
        const std::int64_t sum = sum_;
        std::string why = status.error_message();
        delete this;
        if (complete)
            done.set_value(sum);
        else
            done.set_exception(std::make_exception_ptr(std::runtime_error("stream ended: " + why)));
    }

private:
    explicit EchoClient(int total) : total_(total) {}
    void run(Next next) {
        if (next == Next::Write) StartWrite(out_.front());
        if (next == Next::Close) StartWritesDone();
    }

    const int total_;
    grpc::ClientContext context_;
    cronoq::v1::ServerMessage in_;
    WriteQueue<cronoq::v1::WorkerMessage> out_;
    std::uint64_t sent_ = 0;  // on the reading side once started
    int received_ = 0;
    std::int64_t sum_ = 0;
    std::promise<std::int64_t> done_;
};

void BM_GrpcEchoBaseline(benchmark::State& state) {
    EchoService service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    auto server = builder.BuildAndStart();
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    auto stub = cronoq::v1::Workers::NewStub(channel);

    auto run_batch = [&]() -> std::string {
        auto done = EchoClient::start(*stub, echo_batch);
        return cronoq_bench::check_sum(done, cronoq_bench::expected_sum(echo_batch), "BM_GrpcEchoBaseline",
                                       echo_hang_limit);
    };
    std::string error = run_batch();  // connects the channel
    if (!error.empty()) state.SkipWithError(("warm-up: " + error).c_str());
    const auto t0 = std::chrono::steady_clock::now();
    const double cpu0 = cronoq_bench::cpu_seconds_self();
    while (error.empty() && state.KeepRunningBatch(echo_batch)) {
        error = run_batch();
        if (!error.empty()) state.SkipWithError(error.c_str());
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
    state.counters["round_trips_per_s"] = static_cast<double>(state.iterations()) / elapsed.count();
    state.counters["cpu_us_per_round_trip"] =
        (cronoq_bench::cpu_seconds_self() - cpu0) * 1e6 / static_cast<double>(state.iterations());
    server->Shutdown();
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GrpcEchoBaseline)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
