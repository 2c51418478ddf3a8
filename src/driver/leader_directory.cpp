// redirect_to_leader (leader_directory.hpp).
#include "leader_directory.hpp"

#include <cronoq/logging.hpp>
#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>

#include "shard_config_codec.hpp"

#include <spdlog/spdlog.h>

#include <exception>

namespace cronoq::detail {

namespace {

/// The endpoint the leader of `shard` in `epoch` advertised; none for a
/// configuration of another epoch (an earlier leader's: the new one has not
/// written its own yet) or one this version cannot read.
std::optional<std::string> advertised(const std::vector<store::ShardConfig>& configs, std::string_view shard,
                                      std::uint64_t epoch) {
    for (const auto& config : configs) {
        if (config.shard != shard) continue;
        try {
            ShardConfigBody body = decode_shard_config(config.body);
            if (body.epoch != epoch || body.advertise.empty()) return std::nullopt;
            return std::move(body.advertise);
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> shard_of_pool(Store& store, const std::string& pool) {
    try {
        for (const auto& [name, shard] : store.journal().read_shards().pools)
            if (name == pool) return shard;
    } catch (const StoreError& e) {
        logger()->warn("worker endpoint: cannot read the shards of the store: {}", e.what());
    }
    return std::nullopt;
}

ConnectRefused redirect_to_leader(Store& store, const std::string& why, const std::string& shard) {
    ConnectRefused refused{ConnectRefused::Kind::NotLeader, why, shard, std::nullopt};
    try {
        // The lease first: a configuration read after it is at least as new.
        std::optional<store::LeaseView> lease;
        for (const auto& l : store.journal().read_shards().leases)
            if (l.shard == shard) lease = l.lease;
        if (lease && lease->held) refused.endpoint = advertised(store.client_access().configs(), shard, lease->epoch);
    } catch (const StoreError& e) {
        logger()->warn("worker endpoint: cannot read who leads the store: {}", e.what());
    }
    refused.message += refused.endpoint ? "; shard \"" + refused.shard + "\" is led at " + *refused.endpoint
                                        : "; no process leads shard \"" + refused.shard + "\" now: retry later";
    return refused;
}

}  // namespace cronoq::detail
