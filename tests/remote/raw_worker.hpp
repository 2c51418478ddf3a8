#pragma once
// A worker that speaks the protocol by hand (the generated stubs, blocking
// calls), to see exactly what the server sends it.
#include "cronoq/v1/workers.grpc.pb.h"

#include <grpcpp/client_context.h>

#include <memory>
#include <optional>
#include <string>

namespace cronoq::test {

class RawWorker {
public:
    /// Opens a stream to `address` with the token "secret" and sends
    /// `register` for `pool` (one slot, this protocol version).
    explicit RawWorker(const std::string& address, const std::string& pool = "work");
    ~RawWorker();
    RawWorker(const RawWorker&) = delete;
    RawWorker& operator=(const RawWorker&) = delete;

    /// The next message; empty once the server ended the stream.
    std::optional<v1::ServerMessage> read();
    /// The messages up to `shutdown`; empty if the stream ends first.
    std::optional<v1::Shutdown> read_until_shutdown();

private:
    std::unique_ptr<v1::Workers::Stub> stub_;
    grpc::ClientContext context_;
    std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::ServerMessage>> stream_;
};

}  // namespace cronoq::test
