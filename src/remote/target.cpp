// parse_target: RemoteWorkerOptions::target and its scheme (docs/remote.md).
#include "client_stream.hpp"

#include <cronoq/remote/remote_worker_error.hpp>

namespace cronoq::detail {

ParsedTarget parse_target(const std::string& target, bool have_tls) {
    constexpr std::string_view http = "http://", https = "https://";
    constexpr auto invalid = RemoteWorkerError::Code::InvalidArgument;
    const std::string_view t = target;
    ParsedTarget parsed;
    if (t.substr(0, https.size()) == https) {
        if (!have_tls)
            throw RemoteWorkerError(invalid, "cronoq: target " + target + " is https:// but the worker has no tls settings");
        parsed = {std::string(t.substr(https.size())), true};
    } else if (t.substr(0, http.size()) == http) {
        if (have_tls)
            throw RemoteWorkerError(invalid, "cronoq: target " + target +
                                                 " is http:// (plaintext) but the worker has tls settings: use https://");
        parsed = {std::string(t.substr(http.size())), false};
    } else {
        parsed = {target, have_tls};
    }
    while (!parsed.address.empty() && parsed.address.back() == '/') parsed.address.pop_back();
    if (parsed.address.empty()) throw RemoteWorkerError(invalid, "cronoq: empty worker target");
    return parsed;
}

}  // namespace cronoq::detail
