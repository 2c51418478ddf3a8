#pragma once
// The dashboard's routes (docs/guide/dashboard.md, "Routes") over a
// scheduler's core: each request becomes a reply, apart from the HTTP
// library and from the access rules (access_rules.hpp), which the server
// applies first.
#include <cronoq/detail/scheduler_core.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace cronoq::dashboard_detail {

struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
};

/// `{"error": message}` with `status`.
Reply error_reply(int status, const std::string& message);

/// Query parameters, percent-decoded.
using Parameters = std::map<std::string, std::string, std::less<>>;

class Api {
public:
    Api(std::weak_ptr<detail::SchedulerCore> core, bool read_only) : core_(std::move(core)), read_only_(read_only) {}

    /// Whether `method` on `path` changes something (an action): the
    /// server refuses those cross-site, and the API in read-only mode.
    static bool is_action(std::string_view method, std::string_view path);

    /// The reply to one request. Never throws: errors become 4xx/5xx
    /// replies with `{"error": "..."}`.
    Reply handle(std::string_view method, std::string_view path, const Parameters& parameters) const;

private:
    Reply dispatch(detail::SchedulerCore& core, std::string_view method, std::string_view path,
                   const Parameters& parameters) const;

    std::weak_ptr<detail::SchedulerCore> core_;
    bool read_only_;
};

}  // namespace cronoq::dashboard_detail
