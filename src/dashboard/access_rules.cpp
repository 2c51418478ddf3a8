#include "access_rules.hpp"

#include <cronoq/config_error.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace cronoq::dashboard_detail {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

/// `host:port` or `[v6]:port` into its parts; empty on malformed text.
struct HostPort {
    std::string host;
    std::string_view port;
};
std::optional<HostPort> split_host_port(std::string_view text) {
    if (text.starts_with('[')) {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return std::nullopt;
        if (close + 1 == text.size()) return HostPort{std::string(text.substr(1, close - 1)), {}};
        if (text[close + 1] != ':') return std::nullopt;
        return HostPort{std::string(text.substr(1, close - 1)), text.substr(close + 2)};
    }
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return HostPort{std::string(text), {}};
    if (text.substr(0, colon).find(':') != std::string_view::npos) return std::nullopt;  // unbracketed IPv6
    return HostPort{std::string(text.substr(0, colon)), text.substr(colon + 1)};
}

bool loopback_ip(const std::string& host) {
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
    return false;
}

bool ip_literal(const std::string& host) {
    in_addr v4{};
    in6_addr v6{};
    return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

bool loopback_name(const std::string& host) { return lower(host) == "localhost" || loopback_ip(host); }

}  // namespace

ListenAddress check_config(const DashboardConfig& config) {
    const auto parts = split_host_port(config.listen);
    if (!parts || parts->port.empty())
        throw ConfigError("dashboard listen: \"" + config.listen + "\" is not host:port (e.g. 127.0.0.1:7071, [::1]:0)");
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(parts->port.data(), parts->port.data() + parts->port.size(), port);
    if (ec != std::errc() || end != parts->port.data() + parts->port.size() || port > 65535)
        throw ConfigError("dashboard listen: \"" + config.listen + "\": the port must be a number from 0 to 65535");
    ListenAddress out;
    out.host = lower(parts->host) == "localhost" ? "127.0.0.1" : parts->host;
    if (!ip_literal(out.host))
        throw ConfigError("dashboard listen: \"" + config.listen + "\": the host must be an IP address or localhost");
    // The token travels in a cookie too: RFC 6265's cookie-value octets only.
    for (const char c : config.token)
        if (c < 0x21 || c > 0x7e || c == '"' || c == ',' || c == ';' || c == '\\')
            throw ConfigError("dashboard token: only printable ASCII without spaces, quotes, commas, semicolons or backslashes");
    out.port = static_cast<std::uint16_t>(port);
    out.loopback = loopback_ip(out.host);
    if (!out.loopback && config.token.empty())
        throw ConfigError("dashboard listen: \"" + config.listen +
                          "\" is not a loopback address: set a token (DashboardConfig::token) to serve it");
    return out;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::optional<std::string_view> cookie_value(std::string_view header, std::string_view name) {
    while (!header.empty()) {
        const auto semi = header.find(';');
        const std::string_view pair = trim(header.substr(0, semi));
        header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && trim(pair.substr(0, eq)) == name) return trim(pair.substr(eq + 1));
    }
    return std::nullopt;
}

bool has_token(const std::string& token, const RequestHeaders& headers) {
    if (token.empty()) return true;
    if (headers.authorization) {
        const std::string_view value = trim(*headers.authorization);
        constexpr std::string_view bearer = "bearer ";
        if (value.size() > bearer.size() && lower(value.substr(0, bearer.size())) == bearer &&
            equal_constant_time(trim(value.substr(bearer.size())), token))
            return true;
    }
    if (headers.cookie) {
        const auto value = cookie_value(*headers.cookie, token_cookie);
        if (value && equal_constant_time(*value, token)) return true;
    }
    return false;
}

bool loopback_host(const RequestHeaders& headers) {
    if (!headers.host) return false;
    const auto parts = split_host_port(trim(*headers.host));
    return parts && loopback_name(parts->host);
}

bool cross_site(const RequestHeaders& headers) {
    if (headers.sec_fetch_site) {
        const std::string site = lower(trim(*headers.sec_fetch_site));
        if (site != "same-origin" && site != "none") return true;
    }
    if (headers.origin) {
        const std::string origin = lower(trim(*headers.origin));
        const auto scheme_end = origin.find("://");
        if (scheme_end == std::string::npos || !headers.host) return true;  // "null", or nothing to compare with
        return origin.substr(scheme_end + 3) != lower(trim(*headers.host));
    }
    return false;
}

}  // namespace cronoq::dashboard_detail
