#pragma once
// Who leads a store, as a process that does not lead tells a worker
// (docs/remote.md, Redirects): the refusal of a `register`, a redirect to
// the endpoint the leader advertised in its shard's configuration.
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/store/store.hpp>

#include <optional>
#include <string>

namespace cronoq::detail {

/// The refusal (`ConnectRefused::Kind::NotLeader`) of a worker that
/// registers with a process that does not lead `shard` of `store` (its own
/// shard, or the shard of the worker's pool; docs/remote.md, Redirects): the leader's
/// advertised endpoint, verbatim, while its lease is held in the epoch its
/// configuration was written in; none otherwise (nobody leads, or the
/// leader has not written its configuration yet). `why` starts the message.
/// Reads the store on the calling thread; a store that cannot be read gives
/// no endpoint (and a warning in the log).
ConnectRefused redirect_to_leader(Store& store, const std::string& why, const std::string& shard);

/// The shard that claimed `pool` in `store` (docs/store.md, "Shards"); none
/// when no shard did, or the store cannot be read (a warning in the log).
std::optional<std::string> shard_of_pool(Store& store, const std::string& pool);

}  // namespace cronoq::detail
