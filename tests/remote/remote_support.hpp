#pragma once
// Helpers for the remote-worker tests: a RemoteHost that records what the
// server tells it (the scheduler's side of the seam, which these tests do
// not need), worker child processes, scratch folders and test certificates.
#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/task_failure.hpp>

#include "child_process.hpp"
#include "scratch_dir.hpp"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace cronoq::test {

/// Only a guard against a hang: a wait that needs longer than this failed.
inline constexpr auto hang_guard = std::chrono::seconds(60);

/// Records every call of the server; serves pool "work" (and the pools
/// given), granting at most `max_slots` slots with `lease_ttl`.
class RecordingHost : public detail::RemoteHost {
public:
    struct Connected {
        detail::WorkerId id;
        detail::WorkerRegistration registration;
        std::shared_ptr<detail::RemoteSession> session;
    };

    std::set<std::string> pools{"work"};
    std::size_t max_slots = 64;
    std::chrono::nanoseconds lease_ttl = std::chrono::seconds(30);
    /// Refuse every registration of a known pool this way (a scheduler
    /// shutting down, a pool that is not remote).
    std::optional<detail::ConnectRefused::Kind> refuse;
    /// Refuse every registration with this (a redirect), when set.
    std::optional<detail::ConnectRefused> refuse_with;

    std::variant<detail::WorkerGrant, detail::ConnectRefused> connect(
        detail::WorkerRegistration registration, std::shared_ptr<detail::RemoteSession> session) override;
    std::size_t set_slots(detail::WorkerId worker, std::size_t slots) override;
    void report(detail::WorkerId worker, detail::RemoteReport report) override;
    void disconnect(detail::WorkerId worker) override;
    void limit_lease(std::size_t max_message_bytes) override;

    /// Waits (under the lock) until `ready()` holds; false after the hang guard.
    bool wait(const std::function<bool()>& ready);

    // Read under `lock()` or after a `wait` that saw them.
    std::unique_lock<std::mutex> lock() { return std::unique_lock(mu_); }
    std::vector<Connected> connected;
    std::vector<std::chrono::steady_clock::time_point> attempts;  // every connect call
    std::vector<std::pair<detail::WorkerId, detail::RemoteReport>> reports;
    std::vector<std::pair<detail::WorkerId, std::size_t>> slot_requests;
    std::vector<detail::WorkerId> disconnected;
    std::optional<std::size_t> lease_limit;

    /// The reports for `lease` of kind `T`.
    template <class T>
    std::size_t count(LeaseId lease) const {
        std::size_t n = 0;
        for (const auto& [w, r] : reports) n += r.lease == lease && std::holds_alternative<T>(r.what);
        return n;
    }
    /// The end report for `lease` (not a heartbeat), if any.
    std::optional<detail::RemoteReport> end_report(LeaseId lease) const;
    /// Sends a lease to the `index`th connected worker (outside the lock).
    void send_lease(std::size_t index, std::uint64_t lease, std::string payload);

private:
    std::mutex mu_;
    std::condition_variable changed_;
    std::uint64_t next_worker_ = 0;
};

/// Certificates made with openssl for one test run: a CA, a server
/// certificate for 127.0.0.1 and localhost, a client certificate, and a
/// second CA that signed neither.
struct TestCertificates {
    explicit TestCertificates(const std::filesystem::path& dir);
    std::filesystem::path ca, server_cert, server_key, client_cert, client_key, other_ca;
};

/// `--child worker key=value...`: a RemoteWorker<std::string, std::string>
/// (child_worker.cpp).
int child_main(int argc, char** argv);

/// `--child replica key=value...`: a replica serving workers on a SQLite
/// store (child_replica.cpp).
int replica_main(const std::map<std::string, std::string>& args);

/// The task's failure; a success is a test failure (and an empty
/// TaskFailure comes back).
TaskFailure failure_of(BlockingHandle<std::string>& handle);

}  // namespace cronoq::test
