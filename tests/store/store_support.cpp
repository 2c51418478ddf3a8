#include "store_support.hpp"

#include <cronoq/store/client_access.hpp>

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>


namespace cronoq::test {

namespace {
/// Only a guard against a hang: a wait that needs longer than this failed.
constexpr auto hang_guard = std::chrono::seconds(60);
}  // namespace

store::TaskRow task_row(std::uint64_t id, std::optional<std::string> key) {
    store::TaskRow row;
    row.id = TaskId{id};
    row.key = std::move(key);
    row.pool = "default";
    row.kind = "work";
    row.status = TaskStatus::Ready;
    row.submitted_at = row.updated_at = std::chrono::system_clock::now();
    row.options = R"({"priority":"normal"})";
    row.payload = "payload-" + std::to_string(id);
    return row;
}

store::Batch insert_batch(std::uint64_t id) { return store::Batch{{store::TaskInserted{task_row(id)}}}; }

bool commit_and_close(std::shared_ptr<Store> store, std::initializer_list<store::Batch> batches) {
    Reports reports;
    // Declared after `reports`, so that the store reports its release before they go.
    const std::shared_ptr<Store> leading = std::move(store);
    leading->journal().lead(reports.handlers());
    for (const store::Batch& batch : batches)
        if (!reports.wait_committed(leading->journal().enqueue(batch))) return false;
    return true;
}

void expect_takes_over_the_v3_lease(Store& store, Reports& reports) {
    store.journal().lead(reports.handlers());
    ASSERT_TRUE(reports.wait_leading());
    EXPECT_EQ(reports.recovered->epoch, 7u);
    EXPECT_EQ(reports.recovered->marks.next_task_id, 4096u);
    EXPECT_EQ(reports.recovered->marks.next_lease_id, 77u);
    EXPECT_EQ(reports.recovered->tasks.size(), 1u);
    EXPECT_EQ(reports.recovered->recurring.size(), 1u);
}

void expect_clients_after_migration(Store& store) {
    ASSERT_TRUE(store.get_task(TaskId{1}));
    const auto got = store.client_access().submit({task_row(0)});
    EXPECT_EQ(got.at(0).id, TaskId{store::first_client_task_id});
    EXPECT_EQ(store.journal().read_inbox(10).size(), 1u);
}

store::LeadHandlers Reports::handlers(std::chrono::nanoseconds retention) {
    store::LeadHandlers h;
    h.retention = retention;
    h.on_leading = [this](store::Recovered r) {
        std::lock_guard lock(mutex_);
        recovered = std::move(r);
        changed_.notify_all();
    };
    h.on_commit = [this](const store::CommitReport& report) {
        {
            std::lock_guard lock(mutex_);
            commits.push_back(report);
            if (!report.error) committed = report.committed;
            changed_.notify_all();
        }
        if (after_commit) after_commit(report);
    };
    h.on_lost = [this](const store::LeadershipLost& l) {
        std::lock_guard lock(mutex_);
        lost = l;
        changed_.notify_all();
    };
    return h;
}

bool Reports::wait(const std::function<bool(const Reports&)>& ready) { return wait(ready, hang_guard); }

bool Reports::wait(const std::function<bool(const Reports&)>& ready, std::chrono::nanoseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return ready(*this); });
}

bool Reports::wait_leading() {
    return wait([](const Reports& r) { return r.recovered.has_value() || r.lost.has_value(); }) && recovered;
}

bool Reports::wait_committed(store::Sequence sequence) {
    return wait([sequence](const Reports& r) { return r.committed >= sequence || r.lost.has_value(); }) &&
           committed >= sequence;
}

bool Reports::wait_lost() {
    return wait([](const Reports& r) { return r.lost.has_value(); });
}

RawDb::RawDb(const std::filesystem::path& file) {
    if (sqlite3_open(file.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("sqlite3_open failed");
    sqlite3_busy_timeout(db_, 10000);
}

RawDb::~RawDb() { sqlite3_close(db_); }

void RawDb::exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
        std::string message = error ? error : "?";
        sqlite3_free(error);
        throw std::runtime_error("sqlite: " + message + " in " + sql);
    }
}

std::int64_t RawDb::query_int(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK)
        throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
    std::int64_t value = 0;
    if (sqlite3_step(statement) == SQLITE_ROW) value = sqlite3_column_int64(statement, 0);
    sqlite3_finalize(statement);
    return value;
}

}  // namespace cronoq::test
