#pragma once
// The one way a task's values become bytes and back (docs/design.md,
// "One submission path"): a payload through codec<P> (for the store and for
// a remote pool's leases alike), the options as the store keeps them, an
// output through codec<O>, and every size limit those bytes must keep (the
// store's, a worker server's message size). Runs off the engine's mutex:
// the codecs are the application's code.
#include <cronoq/clock.hpp>
#include <cronoq/detail/erased.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/submit_error.hpp>

#include "pool_runtime.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>

namespace cronoq::detail {

/// A request's bytes, made before the engine's mutex.
struct Encoded {
    std::string payload;  ///< also what a remote pool's leases carry
    std::string options;  ///< with a store only
    std::chrono::system_clock::time_point wall;  ///< the submission's (with a store)
};

class Encoder {
public:
    /// `store_codec` and `max_value_bytes` with a store (`durable`), else unused.
    Encoder(const Pools& pools, const Clock& clock, bool durable, ErasedCodec store_codec, std::size_t max_value_bytes);

    /// Whether `r`'s payload is encoded before the mutex (a store, a remote pool).
    bool needed(const TaskRequest& r) const { return durable_ || (any_remote_ && remote_pool_of(r)); }
    /// Whether any request may need it: without a store or a remote pool, none.
    bool needs_any() const { return durable_ || any_remote_; }
    /// The bytes of `r`; a codec that throws or bytes over a limit make it Invalid.
    SubmitResult<Encoded> encode(const TaskRequest& r) const;
    /// The bytes of a request whose payload was encoded before (a
    /// recurring occurrence: its template's); no application code runs.
    Encoded with_payload(std::string payload, const TaskRequest& r, std::chrono::system_clock::time_point wall) const;
    /// A request from a stored row (recovery, a retry known only from its
    /// row): the options, then the payload through codec<P>. Throws
    /// std::exception on bytes it cannot read.
    TaskRequest decode(const store::TaskRow& row) const;
    /// Why a request decoded from a client's row (docs/store.md, "Clients")
    /// could not be admitted with its stored bytes: over the store's limit,
    /// or a lease larger than a worker server sends; empty when it can.
    std::string stored_refusal(const TaskRequest& r, std::size_t payload_bytes) const;
    /// A stored payload (a schedule's template) through codec<P>. Throws
    /// std::exception on bytes it cannot read.
    ErasedValue decode_payload(std::string_view bytes) const { return ErasedValue(codec_.decode_payload(bytes)); }
    /// A stored success's output; null if none, or unreadable (the task
    /// succeeded all the same).
    std::shared_ptr<const void> decode_output(const store::TaskRow& row) const;
    /// With a store: `out`'s value through codec<O>, kept with it; an
    /// output the codec refuses or over the store's limit fails the attempt.
    void encode_output(AttemptOutput& out) const {
        if (durable_ && out.output.value && !out.error) encode_output_bytes(out);
    }
    /// A remote lease's payload, for a task admitted without its bytes
    /// (encoded after the mutex); empty with `problem` set when it cannot be.
    std::string lease_payload(const PoolRuntime& pool, const ErasedValue& payload, std::string& problem) const;

    /// The remote pool a request goes to; null for a local one (or unknown).
    const PoolRuntime* remote_pool_of(const TaskRequest& r) const;
    /// The largest message a worker server sends (RemoteHost::limit_lease).
    void limit_lease(std::size_t max_message_bytes) { lease_limit_.store(max_message_bytes, std::memory_order_relaxed); }
    /// Called once the pools are made.
    void pools_ready();

private:
    void encode_output_bytes(AttemptOutput& out) const;
    /// Why a task of `pool` with `payload_bytes` encoded could not be sent
    /// to its workers; empty when it can.
    std::string lease_too_large(const TaskRequest& r, const PoolRuntime& pool, std::size_t payload_bytes) const;

    const Pools& pools_;  // fixed after build: read without the engine's mutex
    const Clock& clock_;
    const bool durable_;
    bool any_remote_ = false;
    const ErasedCodec codec_;
    const std::size_t max_value_bytes_;  // a payload or output, encoded
    std::atomic<std::size_t> lease_limit_{std::numeric_limits<std::size_t>::max()};
};

}  // namespace cronoq::detail
