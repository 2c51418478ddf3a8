#pragma once
// Fair sharing between the tenants of one pool (docs/design.md#fair-sharing):
// the configuration of a pool's fair keys and what stats show of them.
// Declared apart from the engine so that the driver's public types can
// carry them without pulling the engine in.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace cronoq {

/// Between the ready tasks of one pool and class, dispatches go to fair keys
/// in proportion to their weights, among the keys that have ready tasks.
/// Tasks without a fair key share the key "". Validated when the pool is
/// added: every weight finite and > 0, a cap >= 1 (else ConfigError naming
/// the field and the key).
struct FairnessConfig {
    /// By key; a key not listed weighs 1.0.
    std::map<std::string, double> weights;
    /// Most running attempts of one key in the pool, over all its classes;
    /// a key at its cap waits without holding back the others. Empty: none.
    std::optional<std::uint32_t> per_key_concurrency;
};

/// One key's backlog in a pool (`PoolStats::top_keys`).
struct FairKeyLoad {
    std::string key;
    std::size_t ready = 0;    ///< tasks Ready
    std::size_t running = 0;  ///< attempts running
};

}  // namespace cronoq
