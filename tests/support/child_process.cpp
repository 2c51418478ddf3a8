#include "child_process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cronoq::test {

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
        ::kill(pid_, SIGCONT);
        wait();
    }
    ::close(read_fd_);
}

std::optional<std::string> Child::read_line(std::chrono::milliseconds guard) {
    const auto deadline = std::chrono::steady_clock::now() + guard;
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

std::optional<std::string> Child::read_until(const std::string& prefix,
                                             const std::function<void(const std::string&)>& seen) {
    while (auto line = read_line()) {
        if (seen) seen(*line);
        if (line->rfind(prefix, 0) == 0) return line;
    }
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

void say(const std::string& line) {
    std::string out = line + "\n";
    std::replace(out.begin(), out.end() - 1, '\n', ' ');
    [[maybe_unused]] const auto n = ::write(STDOUT_FILENO, out.data(), out.size());
}

}  // namespace cronoq::test
