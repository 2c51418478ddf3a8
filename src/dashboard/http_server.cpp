// Dashboard: the HTTP side, the one translation unit that includes RESTinio
// (docs/guide/dashboard.md). It applies the access rules (access_rules.hpp)
// and hands each request to the routes (api.hpp).
//
// RESTinio 0.6 calls Asio functions that ASIO_NO_DEPRECATED hides
// (buffer_cast, address::from_string): this file sees them. It only adds
// declarations; every type's layout is the same as in the driver.
#undef ASIO_NO_DEPRECATED
#include <cronoq/config_error.hpp>
#include <cronoq/dashboard.hpp>

#include "access_rules.hpp"
#include "api.hpp"

#include <restinio/all.hpp>

#include <asio/io_context.hpp>
#include <asio/strand.hpp>

#include <future>
#include <optional>
#include <string>
#include <utility>

namespace cronoq {

namespace {

using namespace dashboard_detail;
using Traits = restinio::traits_t<restinio::asio_timer_manager_t, restinio::null_logger_t>;
using Server = restinio::http_server_t<Traits>;

// Every reply: no sniffing a JSON payload into HTML, no inline script or
// style, no framing, nothing cached.
constexpr const char* content_security_policy =
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// The form a browser without the cookie gets; no script, no inline style.
constexpr const char* login_page =
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>cronoq: sign in</title>"
    "<link rel=\"stylesheet\" href=\"/style.css\"></head><body><main class=\"login\"><h1>cronoq</h1>"
    "<form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" name=\"token\" "
    "autocomplete=\"current-password\" autofocus></label> <button type=\"submit\">Sign in</button></form>"
    "</main></body></html>";

const char* reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

std::optional<std::string_view> header(const restinio::request_handle_t& req, const char* name) {
    const auto value = req->header().opt_value_of(name);
    if (!value) return std::nullopt;
    return std::string_view(value->data(), value->size());
}

restinio::request_handling_status_t respond(const restinio::request_handle_t& req, Reply reply,
                                            std::optional<std::string> extra_header = std::nullopt,
                                            std::optional<std::string> extra_value = std::nullopt) {
    auto response = req->create_response(
        restinio::http_status_line_t{restinio::http_status_code_t{static_cast<std::uint16_t>(reply.status)},
                                     reason(reply.status)});
    response.append_header(restinio::http_field::content_type, reply.content_type)
        .append_header("X-Content-Type-Options", "nosniff")
        .append_header("Content-Security-Policy", content_security_policy)
        .append_header("X-Frame-Options", "DENY")
        .append_header("Referrer-Policy", "no-referrer")
        .append_header(restinio::http_field::cache_control, "no-store");
    if (extra_header && extra_value) response.append_header(*extra_header, *extra_value);
    if (req->header().method() != restinio::http_method_head()) response.set_body(std::move(reply.body));
    return response.done();
}

Reply json_error(int status, const std::string& message) { return error_reply(status, message); }

/// The request's path, percent-decoded; empty when malformed.
std::optional<std::string> decoded_path(const restinio::request_handle_t& req) {
    auto path = restinio::utils::try_unescape_percent_encoding<restinio::utils::relaxed_unescape_traits>(req->header().path());
    if (!path) return std::nullopt;
    return std::move(*path);
}

// What answers requests. Shared with RESTinio's handler, which a
// connection may still hold after the dashboard stopped.
struct Handler {
    Handler(std::shared_ptr<detail::SchedulerCore> core, DashboardConfig c)
        : config_(std::move(c)), api_(std::move(core), config_.read_only) {}

    restinio::request_handling_status_t handle(const restinio::request_handle_t& req) noexcept {
        try {
            return serve(req);
        } catch (const std::exception& e) {
            return respond(req, json_error(500, std::string("internal error: ") + e.what()));
        }
    }

    restinio::request_handling_status_t serve(const restinio::request_handle_t& req) {
        const RequestHeaders headers{header(req, "Authorization"), header(req, "Cookie"), header(req, "Origin"),
                                     header(req, "Sec-Fetch-Site"), header(req, "Host")};
        const std::string method(req->header().method().c_str());
        const auto path = decoded_path(req);
        if (!path) return respond(req, json_error(400, "malformed percent-encoding in the path"));
        // Without a token only loopback names reach it: a page of another
        // site cannot rebind its own name to 127.0.0.1 and read the API.
        if (config_.token.empty() && !loopback_host(headers))
            return respond(req, json_error(403, "the Host header must name a loopback address"));
        const bool action = Api::is_action(method, *path) || *path == "/login";
        if (action && cross_site(headers)) return respond(req, json_error(403, "cross-site request refused"));
        if (*path == "/login" && method == "POST") return login(req);
        if (!has_token(config_.token, headers)) {
            // The page's stylesheet is no secret: the sign-in form uses it.
            if (method == "GET" && *path == "/style.css") return respond(req, api_.handle(method, *path, {}));
            const bool page = method == "GET" && (*path == "/" || *path == "/index.html");
            Reply reply = page ? Reply{401, "text/html; charset=utf-8", login_page}
                               : json_error(401, "a token is required (Authorization: Bearer, or sign in at /)");
            return respond(req, std::move(reply), "WWW-Authenticate", "Bearer realm=\"cronoq\"");
        }
        Parameters parameters;
        try {
            for (const auto& [name, value] : restinio::parse_query<restinio::parse_query_traits::x_www_form_urlencoded>(req->header().query()))
                parameters.insert_or_assign(std::string(name), std::string(value));
        } catch (const std::exception&) {
            return respond(req, json_error(400, "malformed query string"));
        }
        return respond(req, api_.handle(method, *path, parameters));
    }

    restinio::request_handling_status_t login(const restinio::request_handle_t& req) {
        std::string token;
        try {
            const auto form = restinio::parse_query<restinio::parse_query_traits::x_www_form_urlencoded>(req->body());
            if (const auto value = form.get_param("token")) token = std::string(*value);
        } catch (const std::exception&) {
        }
        if (config_.token.empty() || !equal_constant_time(token, config_.token))
            return respond(req, Reply{401, "text/html; charset=utf-8", login_page});
        // HttpOnly: the page's script never sees it; SameSite=Strict: no
        // other site's request carries it.
        Reply reply{303, "text/plain; charset=utf-8", "signed in"};
        auto response = req->create_response(restinio::http_status_line_t{restinio::http_status_code_t{303}, "See Other"});
        response.append_header(restinio::http_field::location, "/")
            .append_header(restinio::http_field::set_cookie,
                           std::string(token_cookie) + "=" + config_.token + "; Path=/; HttpOnly; SameSite=Strict")
            .append_header("X-Content-Type-Options", "nosniff")
            .append_header(restinio::http_field::cache_control, "no-store")
            .set_body(std::move(reply.body));
        return response.done();
    }

    DashboardConfig config_;
    Api api_;
};

}  // namespace

struct Dashboard::Impl {
    Impl(asio::io_context& io, std::shared_ptr<detail::SchedulerCore> core, DashboardConfig config, const ListenAddress& at)
        : io_(io) {
        auto handler = std::make_shared<Handler>(std::move(core), std::move(config));
        server_.emplace(restinio::external_io_context(io), [&](auto& settings) {
            settings.address(asio::ip::make_address(at.host))
                .port(at.port)
                .acceptor_post_bind_hook([this](asio::ip::tcp::acceptor& acceptor) { port_ = acceptor.local_endpoint().port(); })
                .request_handler([handler](restinio::request_handle_t req) { return handler->handle(req); });
        });
        server_->open_sync();
    }

    void stop() {
        if (stopped_) return;
        stopped_ = true;
        if (io_.get_executor().running_in_this_thread() || io_.stopped()) {
            server_->close_sync();
            return;
        }
        std::promise<void> closed;
        auto done = closed.get_future();
        server_->close_async([&closed] { closed.set_value(); },
                             [&closed](std::exception_ptr e) { closed.set_exception(e); });
        done.get();
    }

    asio::io_context& io_;
    std::uint16_t port_ = 0;
    bool stopped_ = false;
    std::optional<Server> server_;
};

Dashboard Dashboard::start_for_core(std::shared_ptr<detail::SchedulerCore> core, DashboardConfig config) {
    const ListenAddress at = check_config(config);
    const auto ex = core->get_executor();
    asio::io_context* io = nullptr;
    if (const auto* plain = ex.target<asio::io_context::executor_type>())
        io = &plain->context();
    else if (const auto* strand = ex.target<asio::strand<asio::io_context::executor_type>>())
        io = &strand->get_inner_executor().context();
    if (!io) throw ConfigError("dashboard: the scheduler must run on an asio::io_context (or a strand of one)");
    return Dashboard(std::make_unique<Impl>(*io, std::move(core), std::move(config), at));
}

Dashboard::Dashboard(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dashboard::Dashboard(Dashboard&&) noexcept = default;
Dashboard& Dashboard::operator=(Dashboard&& other) noexcept {
    if (this != &other) {
        stop();
        impl_ = std::move(other.impl_);
    }
    return *this;
}
Dashboard::~Dashboard() { stop(); }

std::uint16_t Dashboard::port() const { return impl_ ? impl_->port_ : 0; }

void Dashboard::stop() {
    if (impl_) impl_->stop();
}

}  // namespace cronoq
