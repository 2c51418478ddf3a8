#include "postgres_server.hpp"

#include <libpq-fe.h>

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace cronoq::bench {

namespace {

/// The newest /usr/lib/postgresql/<version>/bin holding pg_ctl and initdb,
/// or CRONOQ_PG_BIN.
std::filesystem::path server_binaries() {
    if (const char* bin = std::getenv("CRONOQ_PG_BIN")) return bin;
    std::vector<std::pair<int, std::filesystem::path>> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
        const auto bin = entry.path() / "bin";
        if (!std::filesystem::exists(bin / "pg_ctl") || !std::filesystem::exists(bin / "initdb")) continue;
        found.emplace_back(std::atoi(entry.path().filename().c_str()), bin);
    }
    if (found.empty())
        throw std::runtime_error("no PostgreSQL server binaries (initdb, pg_ctl under /usr/lib/postgresql/*/bin; "
                                 "Debian package postgresql; or set CRONOQ_PG_BIN)");
    return std::max_element(found.begin(), found.end())->second;
}

/// Appends its parts (GCC 12 at -O3 reports a false -Wrestrict on chains of
/// operator+ that start with a literal).
template <class... Parts>
std::string concat(const Parts&... parts) {
    std::string out;
    (out.append(std::string_view(parts)), ...);
    return out;
}

std::string quoted(const std::filesystem::path& p) { return concat("'", p.string(), "'"); }

/// The last lines of a log, for an error message.
std::string tail(const std::filesystem::path& log) {
    std::ifstream in(log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string out;
    for (std::size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); ++i) out += concat("\n  ", lines[i]);
    return out;
}

/// Runs `command` through the shell as the server's owner.
int run_as_owner(const std::string& command) {
    const std::string line = ::geteuid() == 0 ? concat("runuser -u postgres -- ", command) : command;
    return std::system(line.c_str());
}

}  // namespace

PostgresServer::PostgresServer() : bin_(server_binaries()) {
    try {
        start();
    } catch (...) {
        stop();
        throw;
    }
}

void PostgresServer::start() {
    dir_ = std::filesystem::temp_directory_path() / concat("cronoq_bench_pg_", std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    if (::geteuid() == 0) {
        const passwd* owner = ::getpwnam("postgres");
        if (!owner) throw std::runtime_error("running as root, and there is no user postgres to run the server as");
        if (::chown(dir_.c_str(), owner->pw_uid, owner->pw_gid) != 0)
            throw std::runtime_error(concat("cannot give ", dir_.string(), " to the user postgres"));
    }
    const auto data = dir_ / "data";
    const auto log = dir_ / "server.log";
    if (run_as_owner(concat((bin_ / "initdb").string(), " -D ", quoted(data), " -A trust -U postgres >",
                            quoted(dir_ / "initdb.log"), " 2>&1")) != 0)
        throw std::runtime_error(concat("initdb failed:", tail(dir_ / "initdb.log")));
    // The server's own defaults otherwise: fsync and synchronous_commit on.
    if (run_as_owner(concat((bin_ / "pg_ctl").string(), " -D ", quoted(data), " -l ", quoted(log), " -w -t 60 -o \"-k ",
                            dir_.string(), " -c listen_addresses=''\" start >/dev/null")) != 0)
        throw std::runtime_error(concat("pg_ctl start failed:", tail(log)));
    started_ = true;
    conninfo_ = concat("host=", dir_.string(), " dbname=postgres user=postgres");
    conn_ = PQconnectdb(conninfo_.c_str());
    if (PQstatus(conn_) != CONNECTION_OK)
        throw std::runtime_error(std::string("cannot connect to the benchmark's server: ") + PQerrorMessage(conn_));
}

PostgresServer::~PostgresServer() { stop(); }

void PostgresServer::stop() {
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    if (started_)
        run_as_owner(concat((bin_ / "pg_ctl").string(), " -D ", quoted(dir_ / "data"), " -m immediate -w stop >/dev/null 2>&1"));
    started_ = false;
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string PostgresServer::value(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        const std::string error = PQresultErrorMessage(r);
        PQclear(r);
        throw std::runtime_error(concat(sql, ": ", error));
    }
    std::string out = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return out;
}

}  // namespace cronoq::bench
