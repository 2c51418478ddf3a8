#pragma once
// The type-erased forms in which a typed pool (Pool<P, O>) hands its
// executor to the driver core, so that the core compiles once. Tasks travel
// as `TaskRequest` (task_request.hpp), which needs no Asio.
#include <cronoq/core/task_spec.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/result.hpp>
#include <cronoq/scaler.hpp>
#include <cronoq/task_context.hpp>
#include <cronoq/task_error.hpp>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace cronoq::detail {

/// What one attempt produced: an output (null for `void`) or an error.
struct AttemptOutput {
    std::shared_ptr<const void> value;
    std::optional<TaskError> error;
    std::string encoded;  ///< with a store: `value` through codec<O>
};

template <class O>
AttemptOutput erase_result(Result<O>&& r) {
    if (!r.has_value()) return {nullptr, r.error()};
    if constexpr (std::is_void_v<O>)
        return {};
    else
        return {std::make_shared<const O>(std::move(r).value()), std::nullopt};
}

struct ErasedExecutor {
    std::function<asio::awaitable<AttemptOutput>(TaskContext, std::shared_ptr<const void>)> run;
    std::function<void(LeaseId)> abort;  ///< empty when the executor has none
};

struct PoolDefinition {
    core::PoolConfig engine;  ///< name, initial capacity, retry, timeouts
    std::size_t min_workers = 1;
    std::size_t max_workers = 1;
    ErasedExecutor executor;
    std::optional<asio::any_io_executor> run_on;
    /// The user's autoscaling policy (`Pool::scaler`, with
    /// `engine.user_scaler`), called by the driver when the engine asks.
    std::function<std::size_t(const ScalerInput&)> scaler;
};

}  // namespace cronoq::detail
