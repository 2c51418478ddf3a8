#pragma once
// A client's task as the row it commits (docs/guide/replicas.md): checked
// against what the client knows of the configuration, encoded by the
// driver's one Encoder (codec<P>, the options text, the store's size
// limit), with the status admission would give it.
#include <cronoq/clock.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/submit_error.hpp>

#include "../driver/encoder.hpp"
#include "known_config.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace cronoq::detail {

class ClientRows {
public:
    ClientRows(ErasedCodec codec, std::size_t max_value_bytes);

    /// Why the client refuses `r` (no pool, an unknown pool or resource, too
    /// much of one), or nothing.
    static std::optional<std::pair<SubmitError, std::string>> check(const TaskRequest& r, const KnownConfig& known);
    /// `r` as a row: its payload through codec<P> (Invalid when the codec
    /// refuses it or it is over the store's limit), its options, its status.
    /// Precondition: `check` passed.
    SubmitResult<store::TaskRow> row(const TaskRequest& r) const;
    /// A row for bytes already encoded (a retry's payload, from its old row).
    store::TaskRow row(std::string payload, const TaskRequest& r) const;

private:
    store::TaskRow row_of(Encoded&& bytes, const TaskRequest& r) const;

    // What the Encoder needs of a scheduler: a client has no pools (its
    // tasks all name one, checked above) and reads the wall clock.
    Pools no_pools_;
    std::shared_ptr<Clock> clock_;
    Encoder encoder_;
};

}  // namespace cronoq::detail
