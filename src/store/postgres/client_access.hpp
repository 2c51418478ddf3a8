#pragma once
// The PostgreSQL store's ClientAccess (docs/postgres.md, "Clients"):
// submissions and cancels in transactions of their own on a connection
// apart from the leader's and the inspection's, opened at first use and
// replaced when the server dropped it.
#include "pg.hpp"

#include <cronoq/store/client_access.hpp>

#include <chrono>
#include <optional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::store::postgres {

struct Names;

class PostgresClientAccess final : public ClientAccess {
public:
    PostgresClientAccess(std::string conninfo, const Names& names, std::chrono::nanoseconds connect_timeout);
    ~PostgresClientAccess() override;

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

    const std::string conninfo_;
    const Names& names_;
    const std::chrono::nanoseconds connect_timeout_;
    mutable std::mutex mutex_;
    mutable std::unique_ptr<Connection> connection_;
    /// Held by every transaction that adds inbox entries, until it commits.
    const std::int64_t inbox_lock_;
};

/// `LISTEN cronoq_ends` on a connection of its own: a leader's commit that
/// ends tasks notifies it (payload: the schema). A lost connection is made
/// again at the next wait, which then returns true (a notification may have
/// been missed).
class PostgresChangeWatch final : public ChangeWatch {
public:
    PostgresChangeWatch(std::string conninfo, std::string schema, std::chrono::nanoseconds connect_timeout);
    ~PostgresChangeWatch() override;
    bool wait(std::chrono::milliseconds timeout) override;
    /// Makes the wait in progress, or else the next one, return false.
    void interrupt() override;

private:
    void listen();

    const std::string conninfo_;
    const std::string schema_;
    const std::chrono::nanoseconds connect_timeout_;
    std::unique_ptr<Connection> connection_;
    int wake_fd_ = -1;  ///< an eventfd: interrupt() makes it readable
};

}  // namespace cronoq::store::postgres
