#pragma once
// RemoteWorkerError: what a RemoteWorker cannot fix by reconnecting (docs/remote.md).
#include <stdexcept>
#include <string>

namespace cronoq {

/// Thrown by `RemoteWorker::run()` when the server refuses the worker for a
/// reason retrying cannot fix, and by the constructor for invalid options.
/// `code()` is the gRPC status code; the ones a worker reports are named in
/// `Code`. `what()` names the code and gives the server's message.
class RemoteWorkerError : public std::runtime_error {
public:
    /// The gRPC status codes a worker reports, with gRPC's numbers
    /// (`grpc::StatusCode`), so `code()` compares with either:
    /// `e.code() == RemoteWorkerError::Code::Unauthenticated`.
    enum class Code : int {
        /// Invalid options: a target whose scheme does not match `tls`, an
        /// unreadable TLS file, an empty pool, no handler.
        InvalidArgument = 3,
        /// The server knows no pool of that name.
        NotFound = 5,
        /// Another protocol version, or a pool that is not remote.
        FailedPrecondition = 9,
        /// The server rejected the worker's token.
        Unauthenticated = 16,
    };

    RemoteWorkerError(Code code, const std::string& message) : RemoteWorkerError(static_cast<int>(code), message) {}
    /// Any gRPC status code, named or not.
    RemoteWorkerError(int code, const std::string& message)
        : std::runtime_error(code_name(code) + ": " + message), code_(code) {}

    int code() const { return code_; }

    /// gRPC's name of `code` ("UNAUTHENTICATED"), or "gRPC status <n>".
    static std::string code_name(int code) {
        switch (static_cast<Code>(code)) {
            case Code::InvalidArgument: return "INVALID_ARGUMENT";
            case Code::NotFound: return "NOT_FOUND";
            case Code::FailedPrecondition: return "FAILED_PRECONDITION";
            case Code::Unauthenticated: return "UNAUTHENTICATED";
        }
        return "gRPC status " + std::to_string(code);
    }

    /// `code() == Code::X` (and, rewritten, `Code::X == code()`).
    friend constexpr bool operator==(int code, Code named) { return code == static_cast<int>(named); }

private:
    int code_;
};

}  // namespace cronoq
