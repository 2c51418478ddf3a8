#pragma once
// The marks a client puts in a row's options for its leader: one on the
// rows of one `Client::submit_batch` (below), one on a `Client::retry`'s
// row (at the end). The batch's mark makes the leader admit the rows
// together, all or nothing, as a local `submit_batch` (docs/store.md,
// "Clients"). It lives in the task's options text (the store never reads
// it) as
//     "client_batch": {"id": "<hex>", "size": <rows>, "index": <0-based>}
// The rows of one batch are committed in one transaction, so their inbox
// entries are consecutive in commit order; `size` tells the leader whether
// one read of the inbox holds the whole batch.
#include <cronoq/ids.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cronoq::detail {

struct ClientBatchMark {
    std::string id;  ///< the same for every row of one batch, unique across batches
    std::uint32_t size = 0;
    std::uint32_t index = 0;
};

/// A new batch id: 128 random bits in hex.
std::string new_client_batch_id();

/// `options` (the text `encode_options` made) with `mark` added.
std::string mark_client_batch(std::string_view options, const ClientBatchMark& mark);

/// The mark in `options`, if any. Throws std::exception on text that is not
/// task options, or on a malformed mark.
std::optional<ClientBatchMark> client_batch_of(std::string_view options);

/// `options` with the mark of a client's retry of the ended task
/// `replaces`, whose key the client's transaction moved to the new row:
///     "client_retry": {"replaces": <id>}
/// so that the leader moves the key in its engine too, as
/// `Scheduler::retry` does (docs/store.md, "Clients").
std::string mark_client_retry(std::string_view options, TaskId replaces);

/// The task a client's retry replaces, if `options` carry the mark. Throws
/// std::exception as `client_batch_of`.
std::optional<TaskId> client_retry_of(std::string_view options);

}  // namespace cronoq::detail
