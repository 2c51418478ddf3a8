#pragma once
// Helpers for the tests of store clients (docs/guide/replicas.md): the
// client type, and the child processes that lead or submit as clients.
#include "../scheduler/durable_support.hpp"

#include <cronoq/client.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace cronoq::test {

using TestClient = BlockingClient<std::string, std::string>;
using AsyncClient = Client<std::string, std::string>;
using TestHandle = BlockingClientHandle<std::string>;
using AsyncHandle = ClientHandle<std::string>;

/// The first id of the store-wide client range.
inline constexpr std::uint64_t client_ids_from = std::uint64_t{1} << 48;

/// Pool "p" whose attempts take `pause` and answer "<payload>!".
Pool<std::string, std::string> paced_pool(std::chrono::milliseconds pause, std::size_t workers = 4);

/// `--child client-submit <location> <prefix> <count> <pace ms>`: a
/// BlockingClient submits "<prefix>0", "<prefix>1"... to pool "p", keyed by
/// the payload, one at a time, writing "A <id> <key>" once each is
/// committed, then "D".
int client_submit_child_main(int argc, char** argv);

/// `--child client-leader <location> <mode>`: leads pool "p" and writes "L"
/// once it leads; then runs until killed. Modes: `paced` (2 ms attempts,
/// "<payload>!"), `hold` (an attempt writes "S <id>" and waits for its
/// cancellation, then writes "C <id>" and fails).
int client_leader_child_main(int argc, char** argv);

/// `--child shard-leader <location> <shard> <pool>`: leads `shard` with one
/// pool, `pool`, whose attempts take 2 ms and answer "<payload>@<shard>",
/// and writes "L" once it leads; then runs until killed.
int shard_leader_child_main(int argc, char** argv);

/// Reads "A <id> <key>" lines of a `client-submit` child until "D" (or its
/// end of output), into `acks` (id -> key); false if the child ended
/// without "D".
bool read_client_acks(Child& child, std::map<std::uint64_t, std::string>& acks);

}  // namespace cronoq::test
