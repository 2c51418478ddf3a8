// RedirectChain (redirect_chain.hpp).
#include "redirect_chain.hpp"

#include <string_view>

namespace cronoq::detail {

namespace {

std::string key(const ParsedTarget& t) { return (t.tls ? "https://" : "http://") + t.address; }

}  // namespace

std::variant<ParsedTarget, RedirectChain::Declined> RedirectChain::next(const ParsedTarget& from,
                                                                        const std::optional<std::string>& endpoint) {
    if (!endpoint || endpoint->empty()) return Declined{"the server does not lead and names no leader (none leads now)"};
    constexpr std::string_view http = "http://", https = "https://";
    const std::string_view e = *endpoint;
    ParsedTarget to{*endpoint, from.tls};
    if (e.substr(0, https.size()) == https) {
        to = {std::string(e.substr(https.size())), true};
    } else if (e.substr(0, http.size()) == http) {
        to = {std::string(e.substr(http.size())), false};
        if (from.tls && !insecure_redirect_http_)
            return Declined{"refused a redirect from https:// to " + *endpoint +
                                " (plaintext): set RemoteWorkerOptions::insecure_redirect_http to follow it",
                            true};
    }
    while (!to.address.empty() && to.address.back() == '/') to.address.pop_back();
    if (to.address.empty()) return Declined{"the redirect names an empty endpoint \"" + *endpoint + "\""};
    if (key(to) == key(from)) return Declined{"redirected to the server it came from (" + *endpoint + ")", true};
    visited_.insert(key(from));
    if (visited_.count(key(to)))
        return Declined{"a redirect loop: " + *endpoint + " redirected here before", true};
    if (visited_.size() > max_hops)
        return Declined{"more than " + std::to_string(max_hops) + " redirects in a row", true};
    visited_.insert(key(to));
    return to;
}

}  // namespace cronoq::detail
