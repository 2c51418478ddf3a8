#pragma once
// The SQLite backend of the conformance suite: a store file in a scratch
// folder, read and tampered with through a raw SQLite connection.
#include "conformance/store_site.hpp"

#include <cronoq/store/sqlite_store.hpp>

#include <filesystem>

namespace cronoq::test {

class SqliteSite final : public StoreSite {
public:
    SqliteSite();
    std::shared_ptr<Store> open(const StoreOptions& options = {}) override;
    std::vector<std::string> child_args() const override;
    std::int64_t count_tasks() override;
    std::int64_t max_task_id() override;
    std::int64_t leader_epoch() override;
    std::int64_t next_task_id_mark() override;
    std::int64_t live_leases() override;
    std::chrono::nanoseconds lease_left() override;
    void bump_epoch() override;

    const std::filesystem::path& file() const { return file_; }

private:
    ScratchDir dir_;
    std::filesystem::path file_;
};

Backend sqlite_backend();

}  // namespace cronoq::test
