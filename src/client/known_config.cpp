// The union of the shards' configurations (known_config.hpp).
#include "known_config.hpp"

#include "../driver/shard_config_codec.hpp"

#include <exception>

namespace cronoq::detail {

KnownConfig KnownConfig::of(const std::vector<store::ShardConfig>& configs) {
    KnownConfig known;
    for (const store::ShardConfig& config : configs) {
        known.any = true;
        try {
            const ShardConfigBody body = decode_shard_config(config.body);
            for (const auto& p : body.pools) known.pools.emplace(p.name, Pool{config.shard, p.remote});
            for (const auto& r : body.resources) known.resources.emplace(r.name, r.max_units);
        } catch (const std::exception&) {
            known.complete = false;
        }
    }
    return known;
}

std::string KnownConfig::pool_names() const {
    std::string out;
    for (const auto& [name, pool] : pools) out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace cronoq::detail
