#pragma once
// RemoteWorkerError: what a RemoteWorker cannot fix by reconnecting (docs/remote.md).
#include <stdexcept>
#include <string>

namespace cronoq {

/// Thrown by `RemoteWorker::run()` when the server refuses the worker for a
/// reason retrying cannot fix, and by the constructor for invalid options.
/// `code()` is the gRPC status code: 16 UNAUTHENTICATED (a rejected token),
/// 5 NOT_FOUND (an unknown pool), 9 FAILED_PRECONDITION (another protocol
/// version, a pool that is not remote), 3 INVALID_ARGUMENT (options: a
/// target whose scheme does not match `tls`, an unreadable TLS file).
/// `what()` names the code and gives the server's message.
class RemoteWorkerError : public std::runtime_error {
public:
    RemoteWorkerError(int code, const std::string& message)
        : std::runtime_error(code_name(code) + ": " + message), code_(code) {}
    int code() const { return code_; }

    static std::string code_name(int code) {
        switch (code) {
            case 3: return "INVALID_ARGUMENT";
            case 5: return "NOT_FOUND";
            case 9: return "FAILED_PRECONDITION";
            case 16: return "UNAUTHENTICATED";
            default: return "gRPC status " + std::to_string(code);
        }
    }

private:
    int code_;
};

}  // namespace cronoq
