#pragma once
// The mark a client puts on the rows of one `Client::submit_batch`, so that
// the leader admits them together, all or nothing, as a local
// `submit_batch` (docs/store.md, "Clients"). It lives in the task's options
// text (the store never reads it) as
//     "client_batch": {"id": "<hex>", "size": <rows>, "index": <0-based>}
// The rows of one batch are committed in one transaction, so their inbox
// entries are consecutive in commit order; `size` tells the leader whether
// one read of the inbox holds the whole batch.
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

}  // namespace cronoq::detail
