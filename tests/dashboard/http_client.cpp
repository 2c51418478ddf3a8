#include "http_client.hpp"

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace cronoq::test {

HttpResponse http(std::uint16_t port, const std::string& method, const std::string& target,
                  std::vector<std::string> headers, const std::string& body) {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    const bool has_host = std::any_of(headers.begin(), headers.end(), [](const std::string& h) {
        return h.size() > 5 && (h.compare(0, 5, "Host:") == 0 || h.compare(0, 5, "host:") == 0);
    });
    std::string request = method + " " + target + " HTTP/1.1\r\n";
    if (!has_host) request += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
    for (const std::string& h : headers) request += h + "\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    asio::write(socket, asio::buffer(request));
    std::string raw;
    std::error_code ec;
    asio::read(socket, asio::dynamic_buffer(raw), ec);
    if (ec && ec != asio::error::eof) throw std::runtime_error("http: " + ec.message());

    HttpResponse out;
    const auto head_end = raw.find("\r\n\r\n");
    if (head_end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) throw std::runtime_error("http: no response head");
    out.status = std::stoi(raw.substr(9, 3));
    std::size_t line = raw.find("\r\n") + 2;
    while (line < head_end) {
        const auto end = raw.find("\r\n", line);
        const std::string h = raw.substr(line, end - line);
        const auto colon = h.find(':');
        std::string name = h.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        std::string value = h.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        out.headers[name] = value;
        line = end + 2;
    }
    out.body = raw.substr(head_end + 4);
    if (out.header("transfer-encoding") == "chunked") throw std::runtime_error("http: chunked replies are not expected");
    return out;
}

}  // namespace cronoq::test
