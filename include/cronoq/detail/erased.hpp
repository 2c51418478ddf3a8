#pragma once
// The type-erased forms in which a typed pool (Pool<P, O>) hands its
// executor to the driver core, so that the core compiles once. Tasks travel
// as `TaskRequest` (task_request.hpp), which needs no Asio.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/detail/erased_value.hpp>
#include <cronoq/detail/immediate_executor.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/result.hpp>
#include <cronoq/scaler.hpp>
#include <cronoq/task_context.hpp>
#include <cronoq/task_error.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/bind_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>

#include <exception>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace cronoq {
// <cronoq/codec.hpp>, which every store header includes: a scheduler needs
// codecs only on a store or for a remote pool, whose users include it.
template <class T>
struct codec;
template <class T>
struct require_codec;
}  // namespace cronoq

namespace cronoq::detail {

/// `codec<P>` and `codec<O>` behind type erasure: how payloads and outputs
/// cross a store, or reach remote workers and come back. Empty functions
/// where neither applies (and for a `void` output).
struct ErasedCodec {
    std::function<std::string(const void*)> encode_payload;
    std::function<std::shared_ptr<const void>(std::string_view)> decode_payload;
    std::function<std::string(const void*)> encode_output;
    std::function<std::shared_ptr<const void>(std::string_view)> decode_output;
};

/// `codec<P>` and `codec<O>` behind type erasure; fails to compile, naming
/// the missing codec, when one of them has none.
template <class P, class O>
ErasedCodec erase_codec() {
    static_assert(require_codec<P>::value);
    ErasedCodec c;
    c.encode_payload = [](const void* p) { return std::string(codec<P>::encode(*static_cast<const P*>(p))); };
    c.decode_payload = [](std::string_view bytes) -> std::shared_ptr<const void> {
        return std::make_shared<const P>(codec<P>::decode(bytes));
    };
    if constexpr (!std::is_void_v<O>) {
        static_assert(require_codec<O>::value);
        c.encode_output = [](const void* o) { return std::string(codec<O>::encode(*static_cast<const O*>(o))); };
        c.decode_output = [](std::string_view bytes) -> std::shared_ptr<const void> {
            return std::make_shared<const O>(codec<O>::decode(bytes));
        };
    }
    return c;
}


/// An optional value kept on the heap: one pointer to move while empty.
/// For what an attempt's end rarely carries (an error, a store's bytes) but
/// passes through several hands on its way to the engine.
template <class T>
class Boxed {
public:
    Boxed() = default;
    Boxed(std::nullopt_t) {}
    Boxed(T value) : p_(std::make_unique<T>(std::move(value))) {}
    Boxed& operator=(T value) {
        p_ = std::make_unique<T>(std::move(value));
        return *this;
    }
    explicit operator bool() const { return p_ != nullptr; }
    T& operator*() const { return *p_; }
    T* operator->() const { return p_.get(); }

private:
    std::unique_ptr<T> p_;
};

/// A task's output, in one piece from the attempt to its handle and its
/// stored row: the value (null for `void`) and, with a store, the bytes
/// codec<O> made of it (a remote worker's bytes as they came).
struct OutputValue {
    ErasedValue value;
    Boxed<std::string> bytes;
};

/// What one attempt produced: an output or an error.
struct AttemptOutput {
    OutputValue output;
    Boxed<TaskError> error;

    static AttemptOutput failed(TaskError e) { return AttemptOutput{{}, std::move(e)}; }
};

template <class O>
AttemptOutput erase_result(Result<O>&& r) {
    if (!r.has_value()) return AttemptOutput::failed(r.error());
    if constexpr (std::is_void_v<O>)
        return {};
    else
        return {{ErasedValue::make(std::move(r).value()), std::nullopt}, std::nullopt};
}

class SchedulerCore;
struct Attempt;  // the driver's (src/driver/attempt_state.hpp)

/// Where an attempt's coroutine reports its end, once, on the attempt's
/// lane, where the coroutine ended: made by the driver, called by the
/// completion that a typed pool binds to the coroutine (defined in the
/// driver, which knows `Attempt`).
class AttemptCompletion {
public:
    AttemptCompletion(std::shared_ptr<SchedulerCore> core, std::shared_ptr<Attempt> attempt) noexcept
        : core_(std::move(core)), attempt_(std::move(attempt)) {}
    /// What the coroutine returned (`out`) or threw (`thrown`).
    void operator()(std::exception_ptr thrown, AttemptOutput&& out) &&;

private:
    std::shared_ptr<SchedulerCore> core_;
    std::shared_ptr<Attempt> attempt_;
};

/// The coroutine of an executor whose output type has no default value,
/// which co_spawn needs of a coroutine's result: its result erased inside.
template <class O>
asio::awaitable<AttemptOutput> erased_attempt(asio::awaitable<Result<O>> attempt) {
    co_return erase_result<O>(co_await std::move(attempt));
}

/// Spawns an attempt's coroutine, made by `make()`, on `lane`, cancelled
/// through `slot`; its end goes to `done`, at once where the coroutine ends
/// (ImmediateExecutor: inside this call if it never suspends). The user's
/// coroutine is spawned itself, with no frame of the driver's around it,
/// whenever `Result<O>` has a default value (co_spawn passes one beside an
/// exception). Throws what co_spawn throws (std::bad_alloc) and what `done`
/// throws; what `make` throws is the attempt's end.
///
/// `make` runs inside co_spawn, once co_spawn's own frame is allocated:
/// Asio's recycling allocator keeps two frames per thread, and with the
/// coroutine's frame made before co_spawn's, three frames were live at
/// once and the cache missed twice per attempt.
template <class O, class Make>
void spawn_attempt(const asio::any_io_executor& lane, asio::cancellation_slot slot, Make make, AttemptCompletion done) {
    const ImmediateExecutor at_once(asio::query(lane, asio::execution::context));
    if constexpr (std::is_default_constructible_v<Result<O>>) {
        auto end = [done = std::move(done)](std::exception_ptr e, Result<O> r) mutable {
            std::move(done)(e, e ? AttemptOutput{} : erase_result<O>(std::move(r)));
        };
        asio::co_spawn(lane, std::move(make), asio::bind_cancellation_slot(slot, asio::bind_executor(at_once, std::move(end))));
    } else {
        auto end = [done = std::move(done)](std::exception_ptr e, AttemptOutput out) mutable {
            std::move(done)(e, std::move(out));
        };
        asio::co_spawn(lane, [make = std::move(make)]() mutable { return erased_attempt<O>(make()); },
                       asio::bind_cancellation_slot(slot, asio::bind_executor(at_once, std::move(end))));
    }
}

struct ErasedExecutor {
    /// Makes the executor's coroutine for one attempt and spawns it
    /// (spawn_attempt).
    std::function<void(const asio::any_io_executor& lane, asio::cancellation_slot slot, TaskContext ctx,
                       std::shared_ptr<const void> payload, AttemptCompletion done)>
        spawn;
    std::function<void(LeaseId)> abort;  ///< empty when the executor has none
};

struct PoolDefinition {
    core::PoolConfig engine;  ///< name, initial capacity, retry, timeouts
    std::size_t min_workers = 1;
    std::size_t max_workers = 1;
    ErasedExecutor executor;  ///< empty for a remote pool
    /// Whether `workers(...)` was called: a remote pool's capacity is
    /// capped by its max only then.
    bool workers_given = false;
    /// A remote pool's (`Pool::remote`): payloads go out and outputs come
    /// back through it.
    ErasedCodec codec;
    std::optional<asio::any_io_executor> run_on;
    /// The user's autoscaling policy (`Pool::scaler`, with
    /// `engine.user_scaler`), called by the driver when the engine asks.
    std::function<std::size_t(const ScalerInput&)> scaler;
};

}  // namespace cronoq::detail
