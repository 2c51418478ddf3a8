#pragma once
// Who may use the dashboard (docs/guide/dashboard.md, "Access"): where it
// listens, the token, cross-site refusal. Plain functions over the
// request's headers, apart from the HTTP library.
#include <cronoq/dashboard.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cronoq::dashboard_detail {

struct ListenAddress {
    std::string host;  ///< an IP address, without brackets
    std::uint16_t port = 0;
    bool loopback = false;
};

/// `config.listen` read and checked against the token rule. Throws
/// ConfigError naming the field.
ListenAddress check_config(const DashboardConfig& config);

/// The headers a decision needs; absent ones empty.
struct RequestHeaders {
    std::optional<std::string_view> authorization, cookie, origin, sec_fetch_site, host;
};

/// The name of the cookie `POST /login` sets.
inline constexpr std::string_view token_cookie = "cronoq_dashboard_token";

/// Whether the request carries `token` (header or cookie); true for an
/// empty token. Compares in constant time.
bool has_token(const std::string& token, const RequestHeaders& headers);

/// Whether the `Host` header names a loopback host (127.0.0.0/8, [::1],
/// localhost, with any port): the check that keeps a dashboard without a
/// token out of reach of DNS rebinding.
bool loopback_host(const RequestHeaders& headers);

/// Whether a state-changing request comes from another site: an `Origin`
/// whose host and port are not the `Host` the request was sent to, or a
/// `Sec-Fetch-Site` other than `same-origin` or `none`. A request with
/// neither header (curl, a script) is not cross-site.
bool cross_site(const RequestHeaders& headers);

/// The value of cookie `name` in a `Cookie` header.
std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name);

/// `a == b` in time that depends on the lengths only.
bool equal_constant_time(std::string_view a, std::string_view b);

}  // namespace cronoq::dashboard_detail
