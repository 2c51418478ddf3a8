// Keys held by tasks of other shards (shard_keys.hpp).
#include "shard_keys.hpp"

#include <cronoq/logging.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/task_ref.hpp>

#include <spdlog/spdlog.h>

namespace cronoq::detail {

ShardKeys::ShardKeys(std::shared_ptr<Store> store, std::string shard, std::chrono::nanoseconds retention)
    : store_(std::move(store)), shard_(std::move(shard)), retention_(retention) {}

bool ShardKeys::others() {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (read_at_ && now - *read_at_ < refresh) return others_;
    read_at_ = now;  // a store that cannot be read is asked (and logged) once per `refresh` too
    try {
        bool found = false;
        for (const auto& lease : store_->journal().read_shards().leases) found = found || lease.shard != shard_;
        others_ = found;
    } catch (const std::exception& e) {
        logger()->warn("shard \"{}\": cannot read the shards of the store: {}", shard_, e.what());
    }
    return others_;
}

std::optional<ShardKeys::Holder> ShardKeys::Lookup::holder(const std::string& key) {
    std::optional<StoredTask> task;
    std::string shard = "default";  // of a pool no shard claimed
    try {
        task = keys_.store_->get_task(TaskRef(key));
        if (!task) return std::nullopt;
        if (!pools_) pools_ = keys_.store_->journal().read_shards().pools;
        for (const auto& [pool, owner] : *pools_)
            if (pool == task->pool) shard = owner;
    } catch (const std::exception& e) {
        logger()->warn("shard \"{}\": cannot look the key \"{}\" up in the store: {}", keys_.shard_, key, e.what());
        return std::nullopt;
    }
    if (shard == keys_.shard_) return std::nullopt;
    // A terminal task holds its key for the retention after it ended
    // (docs/guide/dependencies-and-keys.md), as in the engine.
    if (is_terminal(task->status) && std::chrono::system_clock::now() - task->updated_at > keys_.retention_)
        return std::nullopt;
    return Holder{task->id, task->pool, std::move(shard)};
}

}  // namespace cronoq::detail
