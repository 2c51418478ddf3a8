#include "raw_worker.hpp"

#include "worker_events.hpp"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

namespace cronoq::test {

RawWorker::RawWorker(const std::string& address, const std::string& pool)
    : stub_(v1::Workers::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
    context_.AddMetadata("authorization", "Bearer secret");
    stream_ = stub_->Work(&context_);
    v1::WorkerMessage message;
    message.mutable_register_()->set_pool(pool);
    message.mutable_register_()->set_slots(1);
    message.mutable_register_()->set_protocol_version(detail::protocol_version);
    stream_->Write(message);
}

RawWorker::~RawWorker() {
    // A stream still open would hold its worker on the server.
    context_.TryCancel();
    v1::ServerMessage rest;
    while (stream_->Read(&rest)) {
    }
    stream_->Finish();
}

std::optional<v1::ServerMessage> RawWorker::read() {
    v1::ServerMessage message;
    if (!stream_->Read(&message)) return std::nullopt;
    return message;
}

std::optional<v1::Shutdown> RawWorker::read_until_shutdown() {
    while (auto message = read())
        if (message->has_shutdown()) return message->shutdown();
    return std::nullopt;
}

}  // namespace cronoq::test
