#include "remote_support.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <unistd.h>


namespace cronoq::test {

// ---- RecordingHost --------------------------------------------------------------------

std::variant<detail::WorkerGrant, detail::ConnectRefused> RecordingHost::connect(
    detail::WorkerRegistration registration, std::shared_ptr<detail::RemoteSession> session) {
    std::lock_guard lock(mu_);
    attempts.push_back(std::chrono::steady_clock::now());
    changed_.notify_all();
    if (refuse_with) return *refuse_with;
    if (refuse && pools.count(registration.pool))
        return detail::ConnectRefused{*refuse, *refuse == detail::ConnectRefused::Kind::NotRemote
                                                   ? "pool \"" + registration.pool + "\" runs local executors"
                                                   : "the scheduler is shutting down"};
    if (!pools.count(registration.pool))
        return detail::ConnectRefused{detail::ConnectRefused::Kind::UnknownPool,
                                      "no pool named \"" + registration.pool + "\""};
    detail::WorkerGrant grant{detail::WorkerId{++next_worker_}, lease_ttl, std::min(registration.slots, max_slots)};
    connected.push_back({grant.id, std::move(registration), std::move(session)});
    changed_.notify_all();
    return grant;
}

std::size_t RecordingHost::set_slots(detail::WorkerId worker, std::size_t slots) {
    std::lock_guard lock(mu_);
    slot_requests.emplace_back(worker, slots);
    changed_.notify_all();
    return std::min(slots, max_slots);
}

void RecordingHost::report(detail::WorkerId worker, detail::RemoteReport report) {
    std::lock_guard lock(mu_);
    reports.emplace_back(worker, std::move(report));
    changed_.notify_all();
}

void RecordingHost::disconnect(detail::WorkerId worker) {
    std::lock_guard lock(mu_);
    disconnected.push_back(worker);
    changed_.notify_all();
}

void RecordingHost::limit_lease(std::size_t max_message_bytes) {
    std::lock_guard lock(mu_);
    lease_limit = max_message_bytes;
}

bool RecordingHost::wait(const std::function<bool()>& ready) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, hang_guard, ready);
}

std::optional<detail::RemoteReport> RecordingHost::end_report(LeaseId lease) const {
    for (const auto& [w, r] : reports)
        if (r.lease == lease && !std::holds_alternative<detail::RemoteReport::Heartbeat>(r.what)) return r;
    return std::nullopt;
}

void RecordingHost::send_lease(std::size_t index, std::uint64_t lease, std::string payload) {
    std::shared_ptr<detail::RemoteSession> session;
    {
        std::lock_guard lock(mu_);
        session = connected.at(index).session;
    }
    detail::RemoteLeaseOut out;
    out.lease = LeaseId{lease};
    out.task = TaskId{lease + 1000};
    out.attempt = 1;
    out.pool = "work";
    out.payload = std::move(payload);
    out.content_type = "text/plain";
    out.kind = "test";
    out.key = "key-" + std::to_string(lease);
    out.tags = {{"team", "a"}};
    out.timeout = std::chrono::seconds(90);
    out.deadline_unix_ns = 1'700'000'000'000'000'000;
    session->lease(std::move(out));
}

// ---- ScratchDir, TestCertificates ------------------------------------------------------

namespace {

void run(const std::string& command) {
    if (std::system((command + " 2>/dev/null").c_str()) != 0) throw std::runtime_error("failed: " + command);
}

/// A P-256 key and a certificate for `subject`, signed by `ca` (self-signed
/// when empty), with `extensions` (an openssl extension section's lines).
void make_certificate(const std::filesystem::path& dir, const std::string& name, const std::string& subject,
                      const std::string& ca, const std::string& extensions) {
    const auto d = dir.string() + "/";
    {
        std::ofstream ext(d + name + ".ext");
        ext << extensions;
    }
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + d + name + ".key -out " +
        d + name + ".csr -subj " + subject);
    const std::string signer = ca.empty() ? "-signkey " + d + name + ".key"
                                          : "-CA " + d + ca + ".pem -CAkey " + d + ca + ".key -CAcreateserial";
    run("openssl x509 -req -days 2 -in " + d + name + ".csr " + signer + " -out " + d + name + ".pem -extfile " + d +
        name + ".ext");
}

}  // namespace

TestCertificates::TestCertificates(const std::filesystem::path& dir) {
    const std::string ca_ext = "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n";
    make_certificate(dir, "ca", "/CN=cronoq-test-ca", "", ca_ext);
    make_certificate(dir, "other_ca", "/CN=cronoq-other-ca", "", ca_ext);
    make_certificate(dir, "server", "/CN=localhost", "ca",
                     "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    make_certificate(dir, "client", "/CN=cronoq-test-worker", "ca", "extendedKeyUsage=clientAuth\n");
    ca = dir / "ca.pem";
    other_ca = dir / "other_ca.pem";
    server_cert = dir / "server.pem";
    server_key = dir / "server.key";
    client_cert = dir / "client.pem";
    client_key = dir / "client.key";
}

TaskFailure failure_of(BlockingHandle<std::string>& handle) {
    try {
        const auto out = handle.get();
        ADD_FAILURE() << "succeeded with " << *out;
    } catch (const TaskFailure& f) {
        return f;
    }
    return TaskFailure(TaskStatus::Succeeded, 0, "");
}

}  // namespace cronoq::test
