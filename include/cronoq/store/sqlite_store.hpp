#pragma once
// SqliteStore: a store in one local SQLite file (docs/guide/durability.md), the embedded
// default. Link cronoq::sqlite.
#include <cronoq/store/store.hpp>

#include <chrono>
#include <filesystem>
#include <memory>

namespace cronoq {

struct SqliteStoreConfig {
    Durability durability = Durability::Full;
    /// How long a leader's lease lasts without renewal; renewed every third
    /// of it. Also how long a commit waits for another process's write lock
    /// before `StoreErrorKind::Busy`, and how long commits may keep failing
    /// before the leader stops.
    std::chrono::nanoseconds leader_lease = std::chrono::seconds(10);
    /// Terminal rows older than this are pruned in the background.
    std::chrono::nanoseconds keep_finished = std::chrono::hours(24);
};

/// One host, a local filesystem: several processes (or several stores in
/// one process) may open the same file; one leads at a time (see
/// `store::Journal`). The file and its `-wal` and `-shm` companions are
/// readable and writable by their owner only.
///
/// Failure modes, all `StoreError` from `open`: a directory that cannot be
/// written or a file that cannot be created (`Io`), a file that is not a
/// cronoq store (`Corrupt`, says so), a store of a newer schema version
/// (`SchemaTooNew`, says which), another process holding the lock during a
/// migration for longer than `leader_lease` (`Busy`). A leader frozen
/// inside a write transaction holds the file's write lock, so a takeover
/// waits until it wakes; its next commit is then fenced.
class SqliteStore final : public Store {
public:
    /// Opens `file`, creating it (mode 0600) when missing, and migrates its
    /// schema forward, one process at a time. Throws `StoreError` as above,
    /// and `ConfigError` for a non-positive `leader_lease` or a negative
    /// `keep_finished`.
    static std::shared_ptr<SqliteStore> open(std::filesystem::path file, SqliteStoreConfig config = {});

    /// Releases leadership (as `journal().release()`) and waits for the
    /// store's thread to end.
    ~SqliteStore() override;

    std::optional<StoredTask> get_task(TaskRef task) const override;
    std::vector<StoredTask> list(TaskStatus status, std::size_t limit) const override;
    TaskPage query(const TaskQuery& query) const override;
    std::size_t prune(std::chrono::nanoseconds older_than) override;
    store::Journal& journal() override;
    store::ClientAccess& client_access() override;

    const std::filesystem::path& path() const;

    struct Impl;

private:
    explicit SqliteStore(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cronoq
