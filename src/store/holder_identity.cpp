#include "holder_identity.hpp"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace cronoq::store {

namespace {

constexpr const char* unreadable = "-";

std::string read_first_line(const std::string& file) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    return line;
}

/// A process's state letter and start time from /proc/<pid>/stat (or a
/// thread's, given its folder); empty when unreadable. The command name
/// (field 2) may hold spaces and parentheses: the fields after it start
/// after its last ')'.
struct ProcStat {
    char state = '?';
    std::string start;
};
std::optional<ProcStat> read_stat(const std::string& folder) {
    const std::string line = read_first_line(folder + "/stat");
    const auto close = line.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(line.substr(close + 1));
    std::vector<std::string> after;  // after[0] is field 3 (state), after[19] field 22 (starttime)
    for (std::string field; fields >> field && after.size() < 20;) after.push_back(std::move(field));
    if (after.size() < 20 || after[0].size() != 1) return std::nullopt;
    return ProcStat{after[0][0], after[19]};
}

std::string host_name() {
    char host[HOST_NAME_MAX + 1] = {};
    if (::gethostname(host, sizeof host - 1) != 0) return {};
    return host;
}

std::string pid_namespace_of_this_process() {
    struct stat info {};
    if (::stat("/proc/self/ns/pid", &info) != 0) return unreadable;
    return std::to_string(info.st_ino);
}

/// Read at each call: a process forked after a store was opened is another
/// process, with its own pid and start time.
HolderIdentity this_process() {
    HolderIdentity id;
    id.pid = static_cast<long>(::getpid());
    id.host = host_name();
    const auto stat = read_stat("/proc/self");
    id.process_start = stat ? stat->start : unreadable;
    id.boot_id = read_first_line("/proc/sys/kernel/random/boot_id");
    // `std::string(unreadable)`, not `= unreadable`: GCC 12 at -O3 warns
    // (-Wrestrict) falsely on assigning the literal to a string in place.
    if (id.boot_id.empty() || id.boot_id.find(' ') != std::string::npos) id.boot_id = std::string(unreadable);
    id.pid_namespace = pid_namespace_of_this_process();
    return id;
}

bool ended_state(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

/// A zombie process leader whose other threads still run is a live
/// process: it has ended only when every thread has.
bool every_thread_ended(const std::string& folder) {
    std::error_code error;
    for (const auto& thread : std::filesystem::directory_iterator(folder + "/task", error)) {
        const auto stat = read_stat(thread.path().string());
        if (stat && !ended_state(stat->state)) return false;
    }
    return !error;
}

template <class Number>
bool parse_number(std::string_view text, Number& out) {
    if (text.empty()) return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
    return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

HolderIdentity HolderIdentity::current() {
    static std::atomic<unsigned> instances{0};
    HolderIdentity id = this_process();
    if (id.host.empty()) id.host = std::string(unreadable);  // as above
    id.instance = ++instances;
    return id;
}

std::string HolderIdentity::text() const {
    return "pid " + std::to_string(pid) + " on " + host + " #" + std::to_string(instance) + " [start " +
           process_start + " boot " + boot_id + " pidns " + pid_namespace + "]";
}

std::optional<HolderIdentity> HolderIdentity::parse(std::string_view text) {
    HolderIdentity id;
    constexpr std::string_view pid_prefix = "pid ", on = " on ", suffix_start = " [";
    if (text.substr(0, pid_prefix.size()) != pid_prefix || text.empty() || text.back() != ']') return std::nullopt;
    text.remove_prefix(pid_prefix.size());
    const auto on_at = text.find(on);
    if (on_at == std::string_view::npos || !parse_number(text.substr(0, on_at), id.pid)) return std::nullopt;
    text.remove_prefix(on_at + on.size());
    // The host name comes before the last " #" ahead of the last " [".
    const auto bracket = text.rfind(suffix_start);
    if (bracket == std::string_view::npos) return std::nullopt;
    const std::string_view named = text.substr(0, bracket);
    const auto hash = named.rfind(" #");
    if (hash == std::string_view::npos || !parse_number(named.substr(hash + 2), id.instance)) return std::nullopt;
    id.host = std::string(named.substr(0, hash));
    std::istringstream fields(std::string(text.substr(bracket + suffix_start.size(),
                                                      text.size() - bracket - suffix_start.size() - 1)));
    std::string start_word, boot_word, pidns_word, extra;
    if (!(fields >> start_word >> id.process_start >> boot_word >> id.boot_id >> pidns_word >> id.pid_namespace) ||
        fields >> extra || start_word != "start" || boot_word != "boot" || pidns_word != "pidns")
        return std::nullopt;
    return id;
}

bool holder_has_ended(std::string_view holder) {
    const auto id = HolderIdentity::parse(holder);
    // What this process compares against stays the same for its life (host,
    // boot, pid namespace): read once, not at every look of a standby.
    static const HolderIdentity self = this_process();
    if (!id || id->host == unreadable || id->host != self.host) return false;
    if (id->boot_id == unreadable || self.boot_id == unreadable) return false;
    // The host booted again since: every process of the earlier boot ended.
    if (id->boot_id != self.boot_id) return true;
    // Another pid namespace's pids mean other processes here.
    if (id->pid_namespace == unreadable || id->pid_namespace != self.pid_namespace) return false;
    if (id->process_start == unreadable || id->pid <= 0 || id->pid > INT_MAX) return false;
    // kill() sees every process, even where /proc hides other users' ones.
    if (::kill(static_cast<pid_t>(id->pid), 0) != 0 && errno == ESRCH) return true;
    const std::string folder = "/proc/" + std::to_string(id->pid);
    const auto stat = read_stat(folder);
    if (!stat) return false;  // ended just now, or hidden: the next look tells
    if (stat->start != id->process_start) return true;  // the pid runs another process now
    return ended_state(stat->state) && every_thread_ended(folder);
}

}  // namespace cronoq::store
