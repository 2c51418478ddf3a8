#pragma once
// PostgresStore: a store in a schema of a PostgreSQL database (docs/guide/durability.md),
// for schedulers on several hosts. Link cronoq::postgres.
#include <cronoq/store/store.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace cronoq {

struct PostgresStoreConfig {
    /// The schema that holds the store's tables, created at `connect`. At
    /// most the server's `max_identifier_length` bytes (63 unless
    /// PostgreSQL was built otherwise): PostgreSQL would truncate a longer
    /// name, so two of them could name one schema.
    std::string schema = "cronoq";
    /// How long a leader's lease lasts without renewal (by the server's
    /// clock); renewed every third of it. Also how long commits may keep
    /// failing before the leader stops.
    std::chrono::nanoseconds leader_lease = std::chrono::seconds(10);
    /// Terminal rows older than this are pruned in the background.
    std::chrono::nanoseconds keep_finished = std::chrono::hours(24);
    /// How long `connect` keeps trying while the server cannot be reached.
    std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);
};

/// Any number of processes on any hosts may connect to the same schema;
/// one leads at a time (see `store::Journal`). The leader holds a
/// session-level advisory lock and a lease row renewed by the server's
/// clock; a standby that finds the lease run out terminates the old
/// leader's backend and takes over in a new epoch. A leader whose
/// connection drops is fenced at once and never leads again.
///
/// Failure modes, all `StoreError` from `connect`: a server that cannot be
/// reached within `connect_timeout` or refuses the login or the grants
/// (`Io`), a schema that exists but is not a cronoq store (`Corrupt`), a
/// store of a newer schema version (`SchemaTooNew`).
class PostgresStore final : public Store {
public:
    /// Connects with the libpq connection string `conninfo` ("host=...
    /// dbname=..." or "postgresql://..."), creates the schema and its
    /// tables when missing and migrates them forward. Throws `StoreError`
    /// as above, and `ConfigError` for a non-positive `leader_lease`, a
    /// negative `keep_finished`, or a schema name that is empty or longer
    /// than the server's `max_identifier_length` (checked once connected).
    static std::shared_ptr<PostgresStore> connect(std::string conninfo, PostgresStoreConfig config = {});

    /// Releases leadership (as `journal().release()`) and waits for the
    /// store's thread to end.
    ~PostgresStore() override;

    std::optional<StoredTask> get_task(TaskRef task) const override;
    std::vector<StoredTask> list(TaskStatus status, std::size_t limit) const override;
    TaskPage query(const TaskQuery& query) const override;
    std::size_t prune(std::chrono::nanoseconds older_than) override;
    store::Journal& journal() override;
    store::ClientAccess& client_access() override;

    const std::string& schema() const;

    struct Impl;

private:
    explicit PostgresStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cronoq
