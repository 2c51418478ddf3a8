#include "connection.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <thread>
#include <unistd.h>

namespace cronoq::store::sqlite {

StoreErrorKind kind_of(int result_code) {
    switch (result_code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return StoreErrorKind::Busy;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_CONSTRAINT:  // a row the scheduler believes new already exists
    case SQLITE_MISMATCH:
        return StoreErrorKind::Corrupt;
    default:
        return StoreErrorKind::Io;
    }
}

namespace {

std::string describe(sqlite3* db, int result_code) {
    std::string text = db ? sqlite3_errmsg(db) : sqlite3_errstr(result_code);
    if ((result_code & 0xff) == SQLITE_FULL) text = "disk full (" + text + ")";
    const int system_errno = db ? sqlite3_system_errno(db) : 0;
    if (system_errno != 0 && (result_code & 0xff) != SQLITE_BUSY) {
        text += " (";
        text += std::strerror(system_errno);
        text += ")";
    }
    return text;
}

}  // namespace

Connection::Connection(const std::filesystem::path& file, Mode mode, std::chrono::milliseconds busy) : path_(file) {
    if (mode == Mode::Create) {
        // O_EXCL: only a file this call makes is opened and closed here. Closing
        // a descriptor of an existing store would drop every POSIX lock this
        // process holds on it, those of its other connections included
        // (SQLite's locks are POSIX locks): another process could then take a
        // lock one of them believes it holds, or delete the WAL under it.
        const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
        } else if (const int error = errno; error != EEXIST) {
            throw StoreError(StoreErrorKind::Io, "cannot create or open the store " + file.string() + ": " +
                                                     std::strerror(error));
        }
    } else {
        std::error_code error;
        if (!std::filesystem::exists(file, error))
            throw StoreError(StoreErrorKind::Io, "no such store file: " + file.string());
    }
    const int flags = (mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(file.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string message = describe(db_, rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError(kind_of(rc), "cannot open the store " + file.string() + ": " + message);
    }
    sqlite3_extended_result_codes(db_, 1);
    const auto busy_ms = busy.count() > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                                                        : static_cast<int>(busy.count());
    busy_ms_ = busy_ms < 1 ? 1 : busy_ms;
    // SQLite's own wait backs off to sleeps of 100 ms between looks: clients
    // committing back to back then keep a leader from ever finding the write
    // lock free, until its lease runs out (docs/store.md, "Clients").
    if (mode == Mode::Create)
        sqlite3_busy_handler(db_, &Connection::look_again, this);
    else
        sqlite3_busy_timeout(db_, busy_ms_);
}

int Connection::look_again(void* connection, int looks) {
    constexpr auto pause = std::chrono::microseconds(500);
    const auto self = static_cast<const Connection*>(connection);
    if (std::chrono::milliseconds(self->busy_ms_) <= pause * looks) return 0;
    std::this_thread::sleep_for(pause);
    return 1;
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::fail(int result_code, std::string_view doing) const {
    if ((result_code & 0xff) == SQLITE_NOTADB)
        throw StoreError(StoreErrorKind::Corrupt, "not a cronoq store: " + path_.string() + " is not a SQLite database");
    throw StoreError(kind_of(result_code), std::string(doing) + " " + path_.string() + ": " + describe(db_, result_code));
}

void Connection::exec(const char* sql) {
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc, "cannot write");
}

std::int64_t Connection::query_int(const char* sql) {
    Statement statement(*this, sql);
    return statement.step() ? statement.int64(0) : 0;
}

Statement::Statement(Connection& connection, const char* sql) : connection_(connection) {
    const int rc = sqlite3_prepare_v3(connection.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &statement_, nullptr);
    if (rc != SQLITE_OK) connection.fail(rc, "cannot read");
}

Statement::~Statement() { sqlite3_finalize(statement_); }

Statement& Statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(statement_, index, value);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text) { return bind_text(index, text, true); }
Statement& Statement::bind_unowned(int index, std::string_view text) { return bind_text(index, text, false); }
Statement& Statement::bind_blob(int index, std::string_view bytes) { return bind_bytes(index, bytes, true); }
Statement& Statement::bind_blob_unowned(int index, std::string_view bytes) { return bind_bytes(index, bytes, false); }

Statement& Statement::bind_text(int index, std::string_view text, bool copy) {
    sqlite3_bind_text64(statement_, index, text.data(), text.size(), copy ? SQLITE_TRANSIENT : SQLITE_STATIC,
                        SQLITE_UTF8);
    return *this;
}

Statement& Statement::bind_bytes(int index, std::string_view bytes, bool copy) {
    // A zero-length blob from a null pointer would bind NULL.
    static const char empty = 0;
    sqlite3_bind_blob64(statement_, index, bytes.empty() ? &empty : bytes.data(), bytes.size(),
                        copy ? SQLITE_TRANSIENT : SQLITE_STATIC);
    return *this;
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(statement_, index);
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(statement_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    reset();
    connection_.fail(rc, "cannot access");
}

void Statement::run() {
    step();
    reset();
}

void Statement::reset() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }

std::int64_t Statement::int64(int column) const { return sqlite3_column_int64(statement_, column); }

std::string Statement::text(int column) const {
    // Blob access: payloads hold arbitrary bytes, including NULs.
    const void* bytes = sqlite3_column_blob(statement_, column);
    const int size = sqlite3_column_bytes(statement_, column);
    return bytes ? std::string(static_cast<const char*>(bytes), static_cast<std::size_t>(size)) : std::string();
}

std::optional<std::string> Statement::optional_text(int column) const {
    if (is_null(column)) return std::nullopt;
    return text(column);
}

WriteTransaction::WriteTransaction(Connection& connection) : connection_(connection) {
    const int rc = sqlite3_exec(connection.get(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) connection.fail(rc, "cannot begin a write transaction on");
}

WriteTransaction::~WriteTransaction() {
    if (open_) sqlite3_exec(connection_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
    const int rc = sqlite3_exec(connection_.get(), "COMMIT", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) connection_.fail(rc, "cannot commit to");
    open_ = false;
}

ReadTransaction::ReadTransaction(Connection& connection) : connection_(connection) {
    const int rc = sqlite3_exec(connection.get(), "BEGIN", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) connection.fail(rc, "cannot read");
}

ReadTransaction::~ReadTransaction() { sqlite3_exec(connection_.get(), "COMMIT", nullptr, nullptr, nullptr); }

}  // namespace cronoq::store::sqlite
