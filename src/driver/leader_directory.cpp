// redirect_to_leader (leader_directory.hpp).
#include "leader_directory.hpp"

#include <cronoq/logging.hpp>
#include <cronoq/store/journal.hpp>

#include <spdlog/spdlog.h>

namespace cronoq::detail {

ConnectRefused redirect_to_leader(Store& store, const std::string& why) {
    ConnectRefused refused{ConnectRefused::Kind::NotLeader, why, default_shard, std::nullopt};
    try {
        const store::LeaseView lease = store.journal().read_lease();
        (void)lease;
    } catch (const StoreError& e) {
        logger()->warn("worker endpoint: cannot read who leads the store: {}", e.what());
    }
    refused.message += refused.endpoint ? "; shard \"" + refused.shard + "\" is led at " + *refused.endpoint
                                        : "; no process leads shard \"" + refused.shard + "\" now: retry later";
    return refused;
}

}  // namespace cronoq::detail
