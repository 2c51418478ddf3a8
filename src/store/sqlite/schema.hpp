#pragma once
// The store's schema: its version, how a file is recognised as a cronoq
// store, and the forward migrations run at open.
#include "connection.hpp"

#include <cstdint>

namespace cronoq::store::sqlite {

/// The schema this build writes, in `PRAGMA user_version`.
inline constexpr std::int64_t schema_version = 4;
/// "CRNQ", in `PRAGMA application_id`: marks the file as a cronoq store.
inline constexpr std::int64_t cronoq_application_id = 0x43524E51;

/// Throws Corrupt for a file that is not a cronoq store (another
/// application's database, not a database) and SchemaTooNew for a newer
/// schema, reading only: a file refused is never changed (docs/store.md,
/// "Schema (version 2)", Opening). An empty database passes.
void recognise(Connection& connection);

/// WAL journal, the durability's synchronous level and a bounded WAL, for
/// a connection that writes.
void configure_writer(Connection& connection, Durability durability);

/// Creates the schema in an empty database or migrates an older one
/// forward, in one write transaction (so one process at a time). Throws
/// Corrupt for a file that is not a cronoq store and SchemaTooNew for a
/// newer schema.
void migrate(Connection& connection);

/// Throws Corrupt naming what is missing when a table of the schema, or
/// the leader row, is gone (a damaged store): without them the scheduler's
/// open() could not lead or recover, and would wait or fail later as if
/// fenced.
void check_tables(Connection& connection);

/// Checks, without writing, that the file is a cronoq store of a schema
/// this build reads; returns its version.
std::int64_t verify(Connection& connection);

}  // namespace cronoq::store::sqlite
