#include "remote_support.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cronoq::test {

// ---- RecordingHost --------------------------------------------------------------------

std::variant<detail::WorkerGrant, detail::ConnectRefused> RecordingHost::connect(
    detail::WorkerRegistration registration, std::shared_ptr<detail::RemoteSession> session) {
    std::lock_guard lock(mu_);
    attempts.push_back(std::chrono::steady_clock::now());
    changed_.notify_all();
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

void RecordingHost::limit_payload(std::size_t bytes) {
    std::lock_guard lock(mu_);
    payload_limit = bytes;
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

ScratchDir::ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cronoq-remote-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
}

ScratchDir::~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

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

// ---- Child -----------------------------------------------------------------------------

Child::Child(std::vector<std::string> args) {
    args.insert(args.begin(), {"/proc/self/exe", "--child"});
    spawn("/proc/self/exe", std::move(args), {});
}

Child::Child(const std::string& program, std::vector<std::string> args, const std::vector<std::string>& env) {
    args.insert(args.begin(), program);
    spawn(program, std::move(args), env);
}

void Child::spawn(const std::string& program, std::vector<std::string> args, const std::vector<std::string>& env) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 onto stdout clears O_CLOEXEC there: the child inherits the write end.
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings(env);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    envp.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    read_fd_ = fds[0];
    if (rc != 0) throw std::runtime_error(std::string("posix_spawn failed: ") + std::strerror(rc));
}

Child::~Child() {
    if (!reaped_) {
        ::kill(pid_, SIGKILL);
        wait();
    }
    ::close(read_fd_);
}

std::optional<std::string> Child::read_line() {
    const auto deadline = std::chrono::steady_clock::now() + hang_guard;
    for (;;) {
        if (const auto newline = buffer_.find('\n'); newline != std::string::npos) {
            std::string line = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{read_fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return std::nullopt;
        char chunk[4096];
        const ssize_t n = ::read(read_fd_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt;
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

std::optional<std::string> Child::read_until(const std::string& prefix) {
    while (auto line = read_line())
        if (line->rfind(prefix, 0) == 0) return line;
    return std::nullopt;
}

void Child::signal(int signal_number) { ::kill(pid_, signal_number); }

int Child::wait() {
    if (!reaped_) {
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        reaped_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return status_;
}

}  // namespace cronoq::test
