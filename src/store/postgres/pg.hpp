#pragma once
// Thin RAII over libpq: one connection, parameterised statements, results,
// pipelined groups of statements, and libpq errors turned into StoreError.
#include <cronoq/store/store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace cronoq::store::postgres {

/// One statement parameter: text, binary (bytea) or NULL.
struct Param {
    std::optional<std::string> value;
    bool binary = false;

    Param() = default;
    Param(std::string text) : value(std::move(text)) {}
    Param(const char* text) : value(std::string(text)) {}
    Param(std::int64_t number) : value(std::to_string(number)) {}
    Param(std::optional<std::string> text) : value(std::move(text)) {}
    static Param bytes(std::string data) {
        Param p(std::move(data));
        p.binary = true;
        return p;
    }
    static Param null() { return Param(); }
};

class Result {
public:
    Result() = default;
    explicit Result(pg_result* result) : result_(result) {}
    ~Result();
    Result(Result&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
    Result& operator=(Result&& other) noexcept;

    int rows() const;
    bool is_null(int row, int column) const;
    std::string text(int row, int column) const;
    std::optional<std::string> optional_text(int row, int column) const;
    /// A bytea column (text format, hex-escaped by the server).
    std::string bytes(int row, int column) const;
    std::optional<std::string> optional_bytes(int row, int column) const;
    std::int64_t int64(int row, int column) const;
    bool boolean(int row, int column) const;
    /// Rows a command changed ("DELETE 12": 12).
    std::int64_t affected() const;
    pg_result* get() const { return result_; }

private:
    pg_result* result_ = nullptr;
};

/// A statement for `Connection::pipeline`.
struct Query {
    std::string sql;
    std::vector<Param> params;
};

class Connection {
public:
    /// Connects, retrying with backoff while the server cannot be reached,
    /// for up to `timeout`; throws StoreError(Io) after it.
    Connection(std::string conninfo, std::chrono::nanoseconds timeout);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    /// False once the connection to the server is gone.
    bool alive() const;
    /// The server process serving this connection.
    int backend_pid() const;

    Result exec(const std::string& sql, const std::vector<Param>& params = {});
    /// Sends the statements in one pipeline (in chunks, so neither side's
    /// buffers fill) and returns their results in order; throws the first
    /// error (the statements after it did not run).
    std::vector<Result> pipeline(const std::vector<Query>& queries);

    /// The connection's socket, to wait on for notifications.
    int socket() const;
    /// Reads what the server sent, without waiting, and returns how many
    /// notifications (`LISTEN`) on `channel` with `payload` arrived; throws
    /// StoreError when the connection is gone.
    std::size_t take_notifications(std::string_view channel, std::string_view payload);

    /// `name` quoted as an SQL identifier.
    std::string identifier(const std::string& name) const;

    /// Throws the StoreError for the connection's last error.
    [[noreturn]] void fail(std::string_view doing, const pg_result* result = nullptr) const;

private:
    pg_conn* conn_ = nullptr;
};

/// Runs `body`, the rest of a transaction already begun on `c`; on any
/// exception rolls it back (when the connection is still there to hear it)
/// and rethrows.
template <class Body>
auto rolling_back(Connection& c, Body&& body) {
    try {
        return body();
    } catch (...) {
        if (c.alive()) {
            try {
                c.exec("ROLLBACK");
            } catch (const StoreError&) {
            }
        }
        throw;
    }
}

}  // namespace cronoq::store::postgres
