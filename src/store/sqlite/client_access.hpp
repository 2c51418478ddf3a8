#pragma once
// The SQLite store's ClientAccess (docs/store.md, "Clients"): submissions
// and cancels in write transactions of their own (BEGIN IMMEDIATE, so one
// writer at a time resolves keys and hands ids out), on a connection apart
// from the leader's and the inspection's, opened at first use.
#include "connection.hpp"
#include "rows.hpp"

#include <cronoq/store/client_access.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace cronoq::store::sqlite {

class SqliteClientAccess final : public ClientAccess {
public:
    SqliteClientAccess(std::filesystem::path file, std::chrono::milliseconds busy);
    ~SqliteClientAccess() override;

    bool cancel(const TaskRef& task) override;
    void set_paused(const std::string& pool, bool paused) override;
    std::vector<std::pair<TaskId, TaskStatus>> ended(const std::vector<TaskId>& ids) const override;
    std::vector<ShardConfig> configs() const override;
    std::unique_ptr<ChangeWatch> watch() override;

protected:
    std::vector<ClientSubmitted> submit_rows(std::vector<TaskRow> rows, std::optional<TaskId> old) override;

private:
    /// Under mutex_.
    Connection& connection() const;

    const std::filesystem::path file_;
    const std::chrono::milliseconds busy_;
    mutable std::mutex mutex_;
    mutable std::unique_ptr<Connection> connection_;
    std::optional<ChangeWriter> writer_;
};

/// Every commit of another connection to the file changes its
/// `PRAGMA data_version`, read on a connection of the watch's own.
class SqliteChangeWatch final : public ChangeWatch {
public:
    SqliteChangeWatch(const std::filesystem::path& file, std::chrono::milliseconds busy);
    bool wait(std::chrono::milliseconds timeout) override;
    /// Makes the wait in progress, or else the next one, return false.
    void interrupt() override;

private:
    std::int64_t version();

    Connection connection_;
    Statement data_version_;
    std::int64_t seen_ = 0;
    std::mutex mutex_;
    std::condition_variable woken_;
    bool interrupted_ = false;
};

}  // namespace cronoq::store::sqlite
