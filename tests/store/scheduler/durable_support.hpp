#pragma once
// Helpers for the tests of a scheduler with a store: the scheduler type,
// stores with a short lead, and the child processes' modes.
#include "store_support.hpp"

#include <cronoq/blocking_scheduler.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>

namespace cronoq::test {

using Durable = BlockingScheduler<std::string, std::string>;

/// A short lead, so that a process taking over after a SIGKILL waits
/// little; `Durability::Full`, as by default.
inline constexpr std::chrono::milliseconds test_lease{600};

inline std::shared_ptr<SqliteStore> open_store(const std::filesystem::path& file) {
    return SqliteStore::open(file, SqliteStoreConfig{Durability::Full, test_lease, std::chrono::hours(24)});
}

/// A child's report to its parent: one line on stdout, a pipe, in one
/// write (a SIGKILL loses whole lines only); line breaks inside become
/// spaces.
void say(const std::string& line);

/// Pool "p" of `workers` slots whose attempts answer "<payload>!" once
/// `gate` is ready (waited for on the blocking pool): a leader that took
/// over changes nothing of what it recovered until the test opens it.
Pool<std::string, std::string> gated_pool(std::shared_future<void> gate, std::size_t workers);

/// `--child lead ...` (standby_test.cpp).
int lead_child_main(int argc, char** argv);
/// `--child random ...` (recovery_invariant_test.cpp).
int random_child_main(int argc, char** argv);

}  // namespace cronoq::test
