#pragma once
// A blocking HTTP/1.1 client for the dashboard tests: one request per
// connection (Connection: close), the response read to its end.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cronoq::test {

struct HttpResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  ///< names lower-cased
    std::string body;
    std::string header(const std::string& name) const {
        const auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

/// Sends `method target` to 127.0.0.1:`port` with `headers` (each
/// "Name: value"; a Host header is added unless one is given) and `body`.
HttpResponse http(std::uint16_t port, const std::string& method, const std::string& target,
                  std::vector<std::string> headers = {}, const std::string& body = "");

}  // namespace cronoq::test
