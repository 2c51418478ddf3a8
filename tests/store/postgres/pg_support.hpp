#pragma once
// Helpers for the PostgreSQL store tests: the test server's connection
// string, a schema of each test's own, and raw SQL for checks and tampering.
#include "store_support.hpp"

#include <cronoq/store/postgres_store.hpp>

#include <libpq-fe.h>

#include <string>

namespace cronoq::test {

/// The test server (CRONOQ_TEST_PG, set by ctest); empty when unset.
std::string pg_conninfo();

/// A schema name unique to the running test and process, dropped at the end.
class PgSchema {
public:
    PgSchema();
    ~PgSchema();
    PgSchema(const PgSchema&) = delete;
    PgSchema& operator=(const PgSchema&) = delete;
    const std::string& name() const { return name_; }
    PostgresStoreConfig config(std::chrono::nanoseconds lease = std::chrono::seconds(10)) const;

private:
    std::string name_;
};

/// A plain libpq connection to the test server; every statement must work.
class RawPg {
public:
    RawPg();
    ~RawPg();
    RawPg(const RawPg&) = delete;
    RawPg& operator=(const RawPg&) = delete;
    void exec(const std::string& sql);
    /// The first column of the first row ("" for none or NULL).
    std::string value(const std::string& sql);
    std::int64_t number(const std::string& sql);

private:
    PGconn* conn_ = nullptr;
};

}  // namespace cronoq::test
