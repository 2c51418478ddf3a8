#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <unistd.h>

namespace cronoq::test {

std::string pg_conninfo() {
    const char* info = std::getenv("CRONOQ_TEST_PG");
    return info ? info : "";
}

PgSchema::PgSchema() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string base = test ? std::string(test->test_suite_name()) + "_" + test->name() : "child";
    for (char& c : base) c = std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
    name_ = "t_" + base.substr(0, 40);
    name_ += "_" + std::to_string(::getpid());
    RawPg raw;
    raw.exec("DROP SCHEMA IF EXISTS \"" + name_ + "\" CASCADE");
}

PgSchema::~PgSchema() {
    try {
        RawPg raw;
        raw.exec("DROP SCHEMA IF EXISTS \"" + name_ + "\" CASCADE");
    } catch (const std::exception&) {
    }
}

PostgresStoreConfig PgSchema::config(std::chrono::nanoseconds lease) const {
    PostgresStoreConfig c;
    c.schema = name_;
    c.leader_lease = lease;
    return c;
}

RawPg::RawPg() {
    conn_ = PQconnectdb(pg_conninfo().c_str());
    if (PQstatus(conn_) != CONNECTION_OK)
        throw std::runtime_error(std::string("test server: ") + PQerrorMessage(conn_));
    exec("SET client_min_messages = warning");
}

RawPg::~RawPg() { PQfinish(conn_); }

void RawPg::exec(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    const std::string error = PQresultErrorMessage(r);
    PQclear(r);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) throw std::runtime_error(sql + ": " + error);
}

std::string RawPg::value(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    const auto status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK) {
        const std::string error = PQresultErrorMessage(r);
        PQclear(r);
        throw std::runtime_error(sql + ": " + error);
    }
    std::string out = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return out;
}

std::int64_t RawPg::number(const std::string& sql) {
    const std::string v = value(sql);
    return v.empty() ? 0 : std::stoll(v);
}

}  // namespace cronoq::test
