#pragma once
// Thin RAII over the SQLite C API: one connection, prepared statements, and
// SQLite's result codes turned into StoreError kinds.
#include <cronoq/store/store.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace cronoq::store::sqlite {

/// The StoreErrorKind of a SQLite result code.
StoreErrorKind kind_of(int result_code);

class Connection {
public:
    enum class Mode { ReadOnly, ReadWrite, Create };

    /// Opens `file`; Create also creates a missing file with mode 0600 first
    /// (SQLite would create it 0644, and its -wal and -shm files copy the
    /// database file's mode). `busy` is how long a statement waits for
    /// another connection's lock before SQLITE_BUSY. A Create connection (a
    /// store's writer, the one a leader commits on) looks for the lock every
    /// half millisecond meanwhile; the others back off as SQLite does.
    Connection(const std::filesystem::path& file, Mode mode, std::chrono::milliseconds busy);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    sqlite3* get() const { return db_; }
    const std::filesystem::path& path() const { return path_; }
    /// How long a statement waits for another connection's lock.
    std::chrono::milliseconds busy() const { return std::chrono::milliseconds(busy_ms_); }

    /// Runs statements with no results (several, separated by ';').
    void exec(const char* sql);
    /// A single-integer query (PRAGMA user_version, SELECT count(*), ...).
    std::int64_t query_int(const char* sql);

    /// Throws the StoreError for `result_code`: "<doing> <file>: <SQLite's
    /// message> (<errno text>)".
    [[noreturn]] void fail(int result_code, std::string_view doing) const;

private:
    static int look_again(void* connection, int looks);

    sqlite3* db_ = nullptr;
    std::filesystem::path path_;
    int busy_ms_ = 1;
};

/// A prepared statement, reset after each use.
class Statement {
public:
    Statement(Connection& connection, const char* sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, std::string_view text);
    Statement& bind_blob(int index, std::string_view bytes);
    Statement& bind_null(int index);
    template <class T>
    Statement& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bind_null(index);
    }
    /// Binds without SQLite's copy of the bytes, which must then stay where
    /// they are until the statement is reset (`run()` right after).
    Statement& bind_unowned(int index, std::string_view text);
    template <class T>
    Statement& bind_unowned(int index, const std::optional<T>& text) {
        return text ? bind_unowned(index, std::string_view(*text)) : bind_null(index);
    }
    Statement& bind_blob_unowned(int index, std::string_view bytes);

    /// True while there is a row; throws StoreError on failure.
    bool step();
    /// Steps a statement that returns no rows, then resets it.
    void run();
    void reset();

    bool is_null(int column) const;
    std::int64_t int64(int column) const;
    std::string text(int column) const;
    std::optional<std::string> optional_text(int column) const;

private:
    // `copy`: SQLite keeps its own copy of the bytes, or reads them where
    // they are until the statement is reset.
    Statement& bind_text(int index, std::string_view text, bool copy);
    Statement& bind_bytes(int index, std::string_view bytes, bool copy);

    Connection& connection_;
    sqlite3_stmt* statement_ = nullptr;
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back unless committed.
class WriteTransaction {
public:
    explicit WriteTransaction(Connection& connection);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    void commit();

private:
    Connection& connection_;
    bool open_ = true;
};

/// BEGIN (deferred) ... COMMIT for a consistent read of several statements.
class ReadTransaction {
public:
    explicit ReadTransaction(Connection& connection);
    ~ReadTransaction();
    ReadTransaction(const ReadTransaction&) = delete;
    ReadTransaction& operator=(const ReadTransaction&) = delete;

private:
    Connection& connection_;
};

}  // namespace cronoq::store::sqlite
