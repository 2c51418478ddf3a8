#pragma once
// CPU time of a process, for the remote benchmarks' per-task counters: on
// this 2-core machine, shared, the wall-clock rates halve under load while
// the CPU a task costs both processes moves much less, so a change is
// judged by both.
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace cronoq_bench {

/// User and system CPU seconds of this process, all its threads.
inline double cpu_seconds_self() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// User and system CPU seconds of the live process `pid` (from
/// /proc/<pid>/stat, in clock ticks); 0 when it cannot be read.
inline double cpu_seconds_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The command name, field 2, is in parentheses and may hold spaces:
    // the fields after its closing one start at field 3.
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::istringstream fields(text.substr(close + 2));
    std::string skip;
    for (int field = 3; field < 14; ++field) fields >> skip;
    double utime = 0, stime = 0;
    fields >> utime >> stime;
    return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace cronoq_bench
