#pragma once
// Where a worker goes after a redirect (docs/remote.md, Redirects): the
// endpoint's scheme, the https -> http rule, and loops.
#include "client_stream.hpp"

#include <optional>
#include <set>
#include <string>
#include <variant>

namespace cronoq::detail {

/// The redirects a worker followed since it last left its own target: a
/// chain ends when the worker registers or goes back to its target.
class RedirectChain {
public:
    /// Why a redirect is not followed: the worker retries its own target
    /// with backoff. `warn`: the worker refused it (https -> http), which
    /// the log says.
    struct Declined {
        std::string why;
        bool warn = false;
    };

    explicit RedirectChain(bool insecure_redirect_http) : insecure_redirect_http_(insecure_redirect_http) {}

    /// The next hop for a refusal with `cronoq-shard` received on a
    /// connection to `from`, whose `cronoq-shard-endpoint` was `endpoint`:
    /// an endpoint without a scheme keeps `from`'s; `http://` after TLS
    /// only with `insecure_redirect_http`; none (nobody leads), `from`
    /// itself, an endpoint this chain already went to, or a chain longer
    /// than `max_hops` is declined.
    std::variant<ParsedTarget, Declined> next(const ParsedTarget& from, const std::optional<std::string>& endpoint);
    /// The worker registered, or went back to its own target.
    void reset() { visited_.clear(); }

    static constexpr std::size_t max_hops = 8;

private:
    bool insecure_redirect_http_;
    std::set<std::string> visited_;  // scheme and address of each hop, and where the chain began
};

}  // namespace cronoq::detail
