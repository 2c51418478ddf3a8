#include "pg.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace cronoq::store::postgres {

Result::~Result() {
    if (result_) PQclear(result_);
}

Result& Result::operator=(Result&& other) noexcept {
    if (this != &other) {
        if (result_) PQclear(result_);
        result_ = other.result_;
        other.result_ = nullptr;
    }
    return *this;
}

int Result::rows() const { return result_ ? PQntuples(result_) : 0; }
bool Result::is_null(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
std::string Result::text(int row, int column) const {
    return std::string(PQgetvalue(result_, row, column), static_cast<std::size_t>(PQgetlength(result_, row, column)));
}
std::optional<std::string> Result::optional_text(int row, int column) const {
    if (is_null(row, column)) return std::nullopt;
    return text(row, column);
}
std::string Result::bytes(int row, int column) const {
    std::size_t length = 0;
    unsigned char* data =
        PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column)), &length);
    if (!data) throw StoreError(StoreErrorKind::Io, "cannot decode a bytea column: out of memory");
    std::string out(reinterpret_cast<const char*>(data), length);
    PQfreemem(data);
    return out;
}
std::optional<std::string> Result::optional_bytes(int row, int column) const {
    if (is_null(row, column)) return std::nullopt;
    return bytes(row, column);
}
std::int64_t Result::int64(int row, int column) const {
    return std::strtoll(PQgetvalue(result_, row, column), nullptr, 10);
}
bool Result::boolean(int row, int column) const { return PQgetvalue(result_, row, column)[0] == 't'; }
std::int64_t Result::affected() const {
    const char* n = PQcmdTuples(result_);
    return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

namespace {

std::string trimmed(const char* message) {
    std::string out = message ? message : "";
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

}  // namespace

Connection::Connection(std::string conninfo, std::chrono::nanoseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + std::min<std::chrono::nanoseconds>(timeout, std::chrono::hours(24 * 365));
    std::chrono::milliseconds backoff(10);
    for (;;) {
        conn_ = PQconnectdb(conninfo.c_str());
        if (conn_ && PQstatus(conn_) == CONNECTION_OK) break;
        std::string message = conn_ ? trimmed(PQerrorMessage(conn_)) : "out of memory";
        if (conn_) PQfinish(conn_);
        conn_ = nullptr;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) {
            std::string what = "cannot connect to the PostgreSQL server: ";
            what += message;
            throw StoreError(StoreErrorKind::Io, what);
        }
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(backoff, deadline - now));
        backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
    }
    // Notices (CREATE ... IF NOT EXISTS) are not the store's output.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    try {
        exec("SET client_min_messages = warning");
    } catch (...) {
        // The server went away right after the connect. A constructor that
        // throws runs no destructor: the connection is closed here.
        PQfinish(conn_);
        conn_ = nullptr;
        throw;
    }
}

Connection::~Connection() {
    if (conn_) PQfinish(conn_);
}

bool Connection::alive() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
int Connection::backend_pid() const { return PQbackendPID(conn_); }

void Connection::fail(std::string_view doing, const pg_result* result) const {
    std::string message(doing);
    message += ": ";
    const char* error = result ? PQresultErrorMessage(result) : nullptr;
    message += trimmed(error && *error ? error : PQerrorMessage(conn_));
    if (!alive()) message += " (the connection to the server is lost)";
    StoreErrorKind kind = StoreErrorKind::Io;
    if (result) {
        const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
        // 55P03 lock not available. Class 23, an integrity constraint
        // violation, is a row the scheduler believes new that exists
        // already: the store does not match the scheduler's ids (Corrupt,
        // as in the SQLite store).
        if (state && (std::string_view(state) == "55P03")) kind = StoreErrorKind::Busy;
        if (state && std::string_view(state).substr(0, 2) == "23") kind = StoreErrorKind::Corrupt;
    }
    throw StoreError(kind, message);
}

namespace {

struct Params {
    explicit Params(const std::vector<Param>& params) {
        for (const Param& p : params) {
            values.push_back(p.value ? p.value->data() : nullptr);
            lengths.push_back(p.value ? static_cast<int>(p.value->size()) : 0);
            formats.push_back(p.binary ? 1 : 0);
        }
    }
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
};

bool ok(const PGresult* result) {
    const ExecStatusType status = PQresultStatus(result);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

}  // namespace

Result Connection::exec(const std::string& sql, const std::vector<Param>& params) {
    const Params p(params);
    // Without parameters through the simple protocol, which takes scripts.
    Result result(params.empty() ? PQexec(conn_, sql.c_str())
                                 : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                                                p.values.data(), p.lengths.data(), p.formats.data(), 0));
    if (!result.get() || !ok(result.get())) fail("PostgreSQL statement failed", result.get());
    return result;
}

std::vector<Result> Connection::pipeline(const std::vector<Query>& queries) {
    // Chunks bound what either side buffers before the other reads it: a
    // blocking pipeline of thousands of statements could otherwise stall
    // with both sides writing.
    constexpr std::size_t chunk = 256;
    std::vector<Result> results;
    results.reserve(queries.size());
    if (PQenterPipelineMode(conn_) != 1) fail("cannot enter pipeline mode");
    std::optional<Result> failed;
    for (std::size_t begin = 0; begin < queries.size(); begin += chunk) {
        const std::size_t end = std::min(queries.size(), begin + chunk);
        bool sent = true;
        for (std::size_t i = begin; i < end; ++i) {
            const Params p(queries[i].params);
            if (PQsendQueryParams(conn_, queries[i].sql.c_str(), static_cast<int>(queries[i].params.size()), nullptr,
                                  p.values.data(), p.lengths.data(), p.formats.data(), 0) != 1) {
                sent = false;
                break;
            }
        }
        if (!sent || PQpipelineSync(conn_) != 1) {
            const std::string message = trimmed(PQerrorMessage(conn_));
            PQexitPipelineMode(conn_);
            std::string what = "cannot send statements to the PostgreSQL server: ";
            what += message;
            if (!alive()) what += " (the connection to the server is lost)";
            throw StoreError(StoreErrorKind::Io, what);
        }
        // Results until the sync: one per statement, each followed by NULL.
        for (;;) {
            PGresult* raw = PQgetResult(conn_);
            if (!raw) {
                if (!alive()) break;
                continue;
            }
            const ExecStatusType status = PQresultStatus(raw);
            if (status == PGRES_PIPELINE_SYNC) {
                PQclear(raw);
                break;
            }
            Result result(raw);
            if (status == PGRES_PIPELINE_ABORTED) continue;
            if (!ok(raw)) {
                if (!failed) failed.emplace(std::move(result));
                continue;
            }
            results.push_back(std::move(result));
        }
        if (failed || !alive()) break;
    }
    PQexitPipelineMode(conn_);
    if (failed) fail("PostgreSQL statement failed", failed->get());
    if (!alive() || results.size() != queries.size()) fail("PostgreSQL pipeline failed");
    return results;
}

int Connection::socket() const { return PQsocket(conn_); }

std::size_t Connection::take_notifications(std::string_view channel, std::string_view payload) {
    if (PQconsumeInput(conn_) != 1) fail("cannot read notifications");
    std::size_t count = 0;
    while (PGnotify* notify = PQnotifies(conn_)) {
        if (channel == notify->relname && payload == notify->extra) ++count;
        PQfreemem(notify);
    }
    return count;
}

std::string Connection::identifier(const std::string& name) const {
    char* quoted = PQescapeIdentifier(conn_, name.data(), name.size());
    if (!quoted) fail("cannot quote the identifier");
    std::string out(quoted);
    PQfreemem(quoted);
    return out;
}

}  // namespace cronoq::store::postgres
