#include "replica_support.hpp"

#include "cronoq/v1/workers.grpc.pb.h"

#include <gtest/gtest.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <csignal>

namespace cronoq::test {

Replica::Replica(std::vector<std::string> store, std::vector<std::string> more) {
    std::vector<std::string> args{"replica"};
    args.insert(args.end(), store.begin(), store.end());
    args.insert(args.end(), more.begin(), more.end());
    child = std::make_unique<Child>(std::move(args));
    const auto line = child->read_until("L ");
    if (line) port = static_cast<std::uint16_t>(std::stoi(line->substr(2)));
}

std::map<std::string, std::uint64_t> Replica::acknowledged(int n) {
    std::map<std::string, std::uint64_t> out;
    for (int i = 0; i < n; ++i) {
        const auto line = child->read_until("A ");
        if (!line) break;
        const auto space = line->find(' ', 2);
        out[line->substr(2, space - 2)] = std::stoull(line->substr(space + 1));
    }
    return out;
}

Refusal register_at(const std::string& address) {
    auto stub = v1::Workers::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer secret");
    auto stream = stub->Work(&context);
    v1::WorkerMessage message;
    message.mutable_register_()->set_pool("work");
    message.mutable_register_()->set_slots(1);
    message.mutable_register_()->set_protocol_version(3);
    stream->Write(message);
    v1::ServerMessage reply;
    while (stream->Read(&reply))
        if (reply.has_registered()) stream->WritesDone();  // accepted: end it
    const grpc::Status status = stream->Finish();
    Refusal out{status.error_code(), status.error_message(), {}};
    for (const auto& [key, value] : context.GetServerTrailingMetadata())
        out.trailers[std::string(key.data(), key.size())] = std::string(value.data(), value.size());
    return out;
}

void expect_all_succeeded(Store& store, const std::map<std::string, std::uint64_t>& acknowledged, Child& new_leader) {
    std::map<std::string, int> finished;
    for (std::size_t i = 0; i < acknowledged.size(); ++i) {
        const auto line = new_leader.read_until("F ", [](const std::string& seen) {
            if (seen.rfind("T ", 0) == 0) ADD_FAILURE() << "a task did not succeed: " << seen;
        });
        ASSERT_TRUE(line) << "the new leader did not report every task";
        ++finished[line->substr(2, line->find(' ', 2) - 2)];
    }
    for (const auto& [key, id] : acknowledged) {
        EXPECT_EQ(finished[key], 1) << key;
        const auto row = store.get_task(TaskRef(TaskId{id}));
        ASSERT_TRUE(row) << key;
        EXPECT_EQ(row->status, TaskStatus::Succeeded) << key;
    }
}

std::int64_t monotonic_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::size_t Lines::add(Child& child) {
    const std::size_t index = readers_.size();
    readers_.emplace_back([this, &child, index] {
        // Until the child's end of output (or the hang guard's silence).
        while (auto line = child.read_line(hang_guard)) {
            std::lock_guard lock(mu_);
            lines_.push_back(Line{index, std::move(*line)});
            changed_.notify_all();
        }
    });
    children_.push_back(&child);
    return index;
}

Lines::~Lines() {
    // A child still running keeps its reader waiting: end it (the Child
    // reaps it later).
    for (Child* child : children_)
        if (!child->reaped()) child->signal(SIGKILL);
    for (auto& reader : readers_) reader.join();
}

bool Lines::wait(const std::function<bool(const std::vector<Line>&)>& ready) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, hang_guard, [&] { return ready(lines_); });
}

std::vector<Lines::Line> Lines::snapshot() {
    std::lock_guard lock(mu_);
    return lines_;
}

}  // namespace cronoq::test
