#pragma once
// Helpers for the tests of replicas serving workers (serve_workers_test.cpp,
// and on PostgreSQL fleet_postgres_test.cpp): replica processes
// (child_replica.cpp), a raw `register` and what its refusal carried, and
// the lines of many children read at once.
#include "remote_support.hpp"

#include <cronoq/store/store.hpp>

#include <grpcpp/support/status.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cronoq::test {

/// A replica process (`--child replica <store args> <more>`); `port` once
/// it printed "L <port>" (0 if it did not).
struct Replica {
    std::unique_ptr<Child> child;
    std::uint16_t port = 0;
    /// `store` is what names the store: {"store=<file>"} for SQLite,
    /// {"schema=<name>"} for PostgreSQL (the server of CRONOQ_TEST_PG).
    Replica(std::vector<std::string> store, std::vector<std::string> more = {});
    std::string address() const { return "127.0.0.1:" + std::to_string(port); }
    /// The acknowledged tasks it printed ("A t<i> <id>"), by key.
    std::map<std::string, std::uint64_t> acknowledged(int n);
};

/// What a refusal of `register` carried: its code and trailing metadata.
struct Refusal {
    grpc::StatusCode code = grpc::StatusCode::OK;
    std::string message;
    std::map<std::string, std::string> trailers;
};

/// One `register` of pool "work" with token "secret" at `address`; an
/// accepted one is ended by the client at once (code OK).
Refusal register_at(const std::string& address);

/// Every acknowledged task ended Succeeded in `store`, and `new_leader`
/// (a replica given `await=`) saw each end once (gtest failures otherwise).
void expect_all_succeeded(Store& store, const std::map<std::string, std::uint64_t>& acknowledged, Child& new_leader);

/// `steady_clock` now, in nanoseconds since its epoch: CLOCK_MONOTONIC, the
/// same clock in every process of the machine, so children's stamps and the
/// test's compare.
std::int64_t monotonic_ns();

/// The lines of several children, each read by a thread of its own, so a
/// test waits for whichever child says something first. Add every child
/// before the first wait; the children must outlive it.
class Lines {
public:
    struct Line {
        std::size_t from;  ///< the index `add` returned
        std::string text;
    };
    Lines() = default;
    Lines(const Lines&) = delete;
    Lines& operator=(const Lines&) = delete;
    ~Lines();  // joins the readers: end (kill) the children first

    std::size_t add(Child& child);
    /// Waits until `ready(all lines so far)` holds; false after the hang guard.
    bool wait(const std::function<bool(const std::vector<Line>&)>& ready);
    std::vector<Line> snapshot();

private:
    std::mutex mu_;
    std::condition_variable changed_;
    std::vector<Line> lines_;
    std::vector<std::thread> readers_;
    std::vector<Child*> children_;
};

}  // namespace cronoq::test
