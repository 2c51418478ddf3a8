#pragma once
// A child process for tests of crashes, failover and remote workers: this
// test binary re-executed with `--child <mode> <args...>` (never fork: a
// test process runs threads, see NOTES.md), or another program, with its
// stdout a pipe to the parent, read line by line.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace cronoq::test {

class Child {
public:
    /// This test binary, as `/proc/self/exe --child <args...>`.
    explicit Child(std::vector<std::string> args);
    /// Another program, with `env` ("NAME=value") added to this one's.
    Child(const std::string& program, std::vector<std::string> args, const std::vector<std::string>& env);
    ~Child();  // SIGKILLs (and SIGCONTs, if stopped) and reaps a child still running
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    /// The next line the child wrote, or empty after `guard` (only a guard
    /// against a hang) or at its end of output.
    std::optional<std::string> read_line(std::chrono::milliseconds guard = std::chrono::seconds(60));
    /// Lines until one starts with `prefix` (returned), each passed to `seen`.
    std::optional<std::string> read_until(const std::string& prefix,
                                          const std::function<void(const std::string&)>& seen = {});
    void signal(int signal_number);
    /// Waits for the child to end; its exit status, or 128 + signal.
    int wait();
    /// Whether `wait` reaped it (its pid may name another process since).
    bool reaped() const { return reaped_; }
    pid_t pid() const { return pid_; }

private:
    void spawn(const std::string& program, std::vector<std::string> argv, const std::vector<std::string>& env);

    pid_t pid_ = -1;
    int read_fd_ = -1;
    std::string buffer_;
    bool reaped_ = false;
    int status_ = 0;
};

/// The child's side of the pipe: one line on stdout, in one write (a
/// SIGKILL loses whole lines only); line breaks inside become spaces.
void say(const std::string& line);

}  // namespace cronoq::test
