#pragma once
// RFC 3339 UTC text <-> time points, for the cron test tables.
#include <date/date.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cronoq::cron_test_time {

inline date::sys_seconds utc(const std::string& rfc3339) {
    std::istringstream in(rfc3339);
    date::sys_seconds parsed;
    in >> date::parse("%Y-%m-%dT%H:%M:%SZ", parsed);
    if (in.fail()) throw std::invalid_argument("bad test time " + rfc3339);
    return parsed;
}

inline std::string rfc3339(std::chrono::system_clock::time_point t) {
    return date::format("%Y-%m-%dT%H:%M:%SZ", std::chrono::floor<std::chrono::seconds>(t));
}

}  // namespace cronoq::cron_test_time
