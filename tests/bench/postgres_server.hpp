#pragma once
// A throw-away PostgreSQL server for the benchmarks: initdb and pg_ctl in a
// temporary directory, listening on a Unix socket in it only, with the
// server's defaults (fsync on, synchronous_commit on), stopped and removed
// at the end. As root (the server refuses to run as root) it runs as the
// user postgres.
#include <cstdint>
#include <filesystem>
#include <string>

struct pg_conn;

namespace cronoq::bench {

class PostgresServer {
public:
    /// Starts it; throws std::runtime_error naming what is missing or what
    /// failed (with the end of the server's log).
    PostgresServer();
    ~PostgresServer();
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    /// libpq's connection string for the database "postgres".
    const std::string& conninfo() const { return conninfo_; }
    /// The first column of the first row of `sql`, run on a connection of
    /// the benchmark's own; throws on an error.
    std::string value(const std::string& sql);

private:
    void start();
    void stop();

    std::filesystem::path dir_;
    std::filesystem::path bin_;
    std::string conninfo_;
    bool started_ = false;
    pg_conn* conn_ = nullptr;
};

}  // namespace cronoq::bench
