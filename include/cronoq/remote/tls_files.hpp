#pragma once
// TlsFiles: the PEM files of one side of a TLS connection between a
// WorkerServer and its workers (docs/remote.md).
#include <filesystem>
#include <optional>

namespace cronoq {

/// PEM files, read when the server starts or the worker connects.
///
/// - On a `WorkerServer`: `cert` and `key` are the server's certificate
///   chain and private key; `ca`, when set, is the CA that client
///   certificates must chain to (mTLS: a worker presenting a certificate
///   it verifies needs no token).
/// - On a `RemoteWorker`: `ca` is the CA the server's certificate must
///   chain to (empty: the system's roots); `cert` and `key`, when both are
///   set, are the worker's client certificate for mTLS (both empty: none).
struct TlsFiles {
    std::filesystem::path cert, key;
    std::optional<std::filesystem::path> ca;
};

}  // namespace cronoq
