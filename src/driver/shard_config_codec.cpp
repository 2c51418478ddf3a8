// A shard's configuration as its leader writes it (shard_config_codec.hpp).
#include "shard_config_codec.hpp"

#include "versioned_json.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace cronoq::detail {

namespace {

using nlohmann::json;

constexpr int shard_config_format_version = 1;

OverflowPolicy overflow_named(const std::string& name) {
    for (OverflowPolicy p : {OverflowPolicy::Wait, OverflowPolicy::Reject, OverflowPolicy::ShedLowest,
                             OverflowPolicy::ShedOldest})
        if (to_string(p) == name) return p;
    throw std::runtime_error("shard configuration: unknown overflow policy \"" + name + "\"");
}

const char* kind_name(Resource::Kind k) { return k == Resource::Kind::TokenBucket ? "token_bucket" : "semaphore"; }

Resource::Kind kind_named(const std::string& name) {
    if (name == "semaphore") return Resource::Kind::Semaphore;
    if (name == "token_bucket") return Resource::Kind::TokenBucket;
    throw std::runtime_error("shard configuration: unknown resource kind \"" + name + "\"");
}

}  // namespace

std::string encode_shard_config(const ShardConfigBody& body) {
    json j = versioned_object(shard_config_format_version);
    json pools = json::array();
    for (const auto& p : body.pools) {
        json e = {{"name", p.name},
                  {"remote", p.remote},
                  {"overflow", std::string(to_string(p.overflow))},
                  {"max_workers", p.max_workers}};
        if (p.max_pending) e["max_pending"] = *p.max_pending;
        pools.push_back(std::move(e));
    }
    j["pools"] = std::move(pools);
    json resources = json::array();
    for (const auto& r : body.resources)
        resources.push_back({{"name", r.name}, {"kind", kind_name(r.kind)}, {"capacity", r.max_units}});
    j["resources"] = std::move(resources);
    if (body.global_max_pending) j["global_max_pending"] = *body.global_max_pending;
    j["retention_ns"] = body.retention.count();
    j["max_value_bytes"] = body.max_value_bytes;
    j["any_kind"] = body.any_kind;
    if (!body.advertise.empty()) j["advertise"] = body.advertise;
    j["epoch"] = body.epoch;
    return j.dump();
}

ShardConfigBody decode_shard_config(std::string_view text) {
    const json j = parse_versioned(text, shard_config_format_version, "shard configuration");
    ShardConfigBody body;
    for (const json& e : j.at("pools")) {
        ShardConfigBody::PoolEntry p;
        p.name = e.at("name").get<std::string>();
        p.remote = e.value("remote", false);
        p.overflow = overflow_named(e.value("overflow", std::string("wait")));
        p.max_workers = e.value("max_workers", std::size_t{0});
        if (e.contains("max_pending")) p.max_pending = e.at("max_pending").get<std::size_t>();
        body.pools.push_back(std::move(p));
    }
    if (j.contains("resources"))
        for (const json& e : j.at("resources"))
            body.resources.push_back({e.at("name").get<std::string>(), kind_named(e.at("kind").get<std::string>()),
                                      e.value("capacity", std::uint32_t{0})});
    if (j.contains("global_max_pending")) body.global_max_pending = j.at("global_max_pending").get<std::size_t>();
    body.retention = std::chrono::nanoseconds(j.value("retention_ns", std::int64_t{0}));
    body.max_value_bytes = j.value("max_value_bytes", std::size_t{0});
    body.any_kind = j.value("any_kind", true);
    body.advertise = j.value("advertise", std::string());
    body.epoch = j.value("epoch", std::uint64_t{0});
    return body;
}

}  // namespace cronoq::detail
