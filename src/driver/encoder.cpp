// The driver's one encoder (encoder.hpp).
#include "encoder.hpp"

#include "task_options.hpp"

#include <cronoq/detail/remote_host.hpp>
#include <cronoq/task_error.hpp>

#include <exception>
#include <utility>

namespace cronoq::detail {

Encoder::Encoder(const Pools& pools, const Clock& clock, bool durable, ErasedCodec store_codec, std::size_t max_value_bytes)
    : pools_(pools), clock_(clock), durable_(durable), codec_(std::move(store_codec)), max_value_bytes_(max_value_bytes) {}

void Encoder::pools_ready() {
    for (const PoolRuntime& p : pools_) any_remote_ = any_remote_ || p.def.engine.remote;
}

const PoolRuntime* Encoder::remote_pool_of(const TaskRequest& r) const {
    if (!r.pool) return pools_.front().def.engine.remote ? &pools_.front() : nullptr;
    for (const PoolRuntime& p : pools_)
        if (*p.name == *r.pool) return p.def.engine.remote ? &p : nullptr;
    return nullptr;  // unknown: the engine says so
}

// With a store, or for a remote pool (whose leases carry these bytes): both
// use codec<P>, so one encoding serves both.
SubmitResult<Encoded> Encoder::encode(const TaskRequest& r) const {
    Encoded e;
    const PoolRuntime* remote = remote_pool_of(r);
    if (durable_) e.wall = clock_.system_now();
    try {
        e.payload = durable_ ? codec_.encode_payload(r.payload.get()) : remote->def.codec.encode_payload(r.payload.get());
    } catch (const std::exception& ex) {
        return {SubmitError::Invalid, std::string("payload: the codec cannot encode it: ") + ex.what()};
    }
    if (durable_ && e.payload.size() > max_value_bytes_)
        return {SubmitError::Invalid, "payload: " + std::to_string(e.payload.size()) +
                                          " bytes encoded, more than the store accepts (" +
                                          std::to_string(max_value_bytes_) + ")"};
    if (remote)
        if (auto problem = lease_too_large(r, *remote, e.payload.size()); !problem.empty())
            return {SubmitError::Invalid, std::move(problem)};
    if (durable_) e.options = encode_options(r, e.wall);
    return e;
}

Encoded Encoder::with_payload(std::string payload, const TaskRequest& r, std::chrono::system_clock::time_point wall) const {
    return Encoded{std::move(payload), durable_ ? encode_options(r, wall) : std::string(), wall};
}

TaskRequest Encoder::decode(const store::TaskRow& row) const {
    TaskRequest r = decode_options(row.options);
    r.payload = codec_.decode_payload(row.payload);
    r.pool = row.pool;
    r.kind = row.kind;
    r.key = row.key;
    return r;
}

std::string Encoder::stored_refusal(const TaskRequest& r, std::size_t payload_bytes) const {
    if (durable_ && payload_bytes > max_value_bytes_)
        return "payload: " + std::to_string(payload_bytes) + " bytes encoded, more than the store accepts (" +
               std::to_string(max_value_bytes_) + ")";
    if (const PoolRuntime* remote = remote_pool_of(r)) return lease_too_large(r, *remote, payload_bytes);
    return {};
}

std::shared_ptr<const void> Encoder::decode_output(const store::TaskRow& row) const {
    if (row.status != TaskStatus::Succeeded || !row.output || !codec_.decode_output) return nullptr;
    try {
        return codec_.decode_output(*row.output);
    } catch (const std::exception&) {
        return nullptr;  // the task succeeded; only its kept output is unreadable
    }
}

void Encoder::encode_output_bytes(AttemptOutput& out) const {
    if (!codec_.encode_output) return;
    try {
        out.output.bytes = codec_.encode_output(out.output.value.get());
    } catch (const std::exception& e) {
        out = AttemptOutput::failed(TaskError::permanent(std::string("encode: ") + e.what()));
        return;
    }
    if (out.output.bytes->size() > max_value_bytes_)
        out = AttemptOutput::failed(TaskError::permanent("encode: the output is " + std::to_string(out.output.bytes->size()) +
                                                         " bytes encoded, more than the store accepts (" +
                                                         std::to_string(max_value_bytes_) + ")"));
}

std::string Encoder::lease_payload(const PoolRuntime& pool, const ErasedValue& payload, std::string& problem) const {
    try {
        return pool.def.codec.encode_payload(payload.get());
    } catch (const std::exception& e) {
        problem = std::string("payload: the codec cannot encode it: ") + e.what();
        return {};
    }
}

std::string Encoder::lease_too_large(const TaskRequest& r, const PoolRuntime& pool, std::size_t payload_bytes) const {
    const std::size_t limit = lease_limit_.load(std::memory_order_relaxed);
    const std::size_t bound = lease_size_bound(payload_bytes, *pool.name, r.kind, r.key.value_or(std::string{}), r.tags);
    if (bound <= limit) return {};
    std::size_t tag_bytes = 0;
    for (const auto& [name, value] : r.tags) tag_bytes += name.size() + value.size();
    return "lease: up to " + std::to_string(bound) + " bytes encoded (payload " + std::to_string(payload_bytes) +
           ", key " + std::to_string(r.key ? r.key->size() : 0) + ", tags " + std::to_string(tag_bytes) +
           "), more than the worker server sends (max_message_bytes " + std::to_string(limit) + ")";
}

}  // namespace cronoq::detail
