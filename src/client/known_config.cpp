// The union of the shards' configurations (known_config.hpp).
#include "known_config.hpp"

#include <nlohmann/json.hpp>

#include <exception>

namespace cronoq::detail {

namespace {

using nlohmann::json;

// A name from an entry that is either the name itself or an object with a
// "name".
std::string config_entry_name(const json& entry) {
    return entry.is_string() ? entry.get<std::string>() : entry.at("name").get<std::string>();
}

// The most units of a resource one task can be granted: a semaphore's
// permits, a token bucket's burst (the names the leader's configuration uses
// for them), or, when given, "capacity".
std::optional<std::uint64_t> config_resource_capacity(const json& entry) {
    if (!entry.is_object()) return std::nullopt;
    for (const char* name : {"capacity", "permits", "burst"})
        if (auto it = entry.find(name); it != entry.end() && it->is_number_unsigned()) return it->get<std::uint64_t>();
    return std::nullopt;
}

void add_shard_config(KnownConfig& known, const store::ShardConfig& config) {
    const json body = json::parse(config.body);
    KnownConfig one;
    if (auto pools = body.find("pools"); pools != body.end())
        for (const json& p : *pools) one.pools.emplace(config_entry_name(p), config.shard);
    if (auto resources = body.find("resources"); resources != body.end())
        for (const json& r : *resources) one.resources.emplace(config_entry_name(r), config_resource_capacity(r));
    known.pools.insert(one.pools.begin(), one.pools.end());
    known.resources.insert(one.resources.begin(), one.resources.end());
    known.any = true;
}

}  // namespace

KnownConfig KnownConfig::of(const std::vector<store::ShardConfig>& configs) {
    KnownConfig known;
    for (const store::ShardConfig& config : configs) {
        try {
            add_shard_config(known, config);
        } catch (const std::exception&) {
            // Unreadable (a newer leader's format): its tasks are checked at
            // ingestion instead.
            known.any = true;
            known.complete = false;
        }
    }
    return known;
}

std::string KnownConfig::pool_names() const {
    std::string out;
    for (const auto& [name, shard] : pools) out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace cronoq::detail
