#pragma once
// Who leads a store, as a process that does not lead tells a worker
// (docs/remote.md, Redirects): the refusal of a `register`, a redirect to
// the endpoint the leader advertised when it started leading.
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/store/store.hpp>

#include <string>

namespace cronoq::detail {

/// The shard every scheduler leads until shards exist.
inline constexpr const char* default_shard = "default";

/// The refusal (`ConnectRefused::Kind::NotLeader`) of a worker that
/// registers with a process that does not lead `store`: the leader's
/// advertised endpoint, verbatim, while its lease is unexpired; none
/// otherwise (nobody leads, or the leader has not written its endpoint
/// yet). `why` is the message's start. Reads the store on the calling
/// thread; a store that cannot be read gives no endpoint.
ConnectRefused redirect_to_leader(Store& store, const std::string& why);

}  // namespace cronoq::detail
