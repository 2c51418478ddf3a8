#include "resource_registry.hpp"

#include "config_checks.hpp"
#include "text.hpp"

#include <cronoq/config_error.hpp>

#include <cmath>

namespace cronoq::core::detail {

namespace {

// The sum of the amounts of every need naming the same resource as
// needs[i], or nothing if an earlier need already named it (so each
// resource is checked and taken once, for its total).
std::optional<std::uint64_t> total_if_first(std::span<const Need> needs, std::size_t i) {
    std::uint64_t total = 0;
    for (std::size_t j = 0; j < needs.size(); ++j) {
        if (needs[j].resource != needs[i].resource) continue;
        if (j < i) return std::nullopt;
        total += needs[j].amount;
    }
    return total;
}

}  // namespace

ResourceId ResourceRegistry::add(Resource resource, Time now) {
    if (auto problem = check_resource(resource)) throw ConfigError(*problem);
    if (find(resource.name)) throw ConfigError(cat({"resource ", quoted(resource.name), ": declared twice"}));
    const auto id = static_cast<ResourceId>(entries_.size());
    Entry entry{std::move(resource), 0, std::nullopt};
    if (entry.declared.kind == Resource::Kind::TokenBucket)
        entry.bucket.emplace(entry.declared.rate_per_s, entry.declared.burst, now);
    entries_.push_back(std::move(entry));
    by_name_.emplace(entries_.back().declared.name, id);
    return id;
}

std::optional<ResourceId> ResourceRegistry::find(std::string_view name) const {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return std::nullopt;
    return it->second;
}

SubmitResult<std::vector<Need>> ResourceRegistry::resolve(std::span<const ResourceRequest> requests) const {
    std::vector<Need> needs;
    std::vector<std::uint64_t> totals;  // beside `needs`: sums may pass 2^32 before the check
    for (const ResourceRequest& r : requests) {
        const auto id = find(r.name);
        if (!id) return {SubmitError::UnknownResource, cat({"unknown resource ", quoted(r.name)})};
        if (r.amount == 0) continue;
        std::size_t k = 0;
        while (k < needs.size() && needs[k].resource != *id) ++k;
        if (k == needs.size()) {
            needs.push_back(Need{*id, 0});
            totals.push_back(0);
        }
        totals[k] += r.amount;
    }
    for (std::size_t k = 0; k < needs.size(); ++k) {
        const Resource& declared = entries_[needs[k].resource].declared;
        if (totals[k] > declared.capacity())
            return {SubmitError::ResourceExceedsCapacity,
                    cat({"resource ", quoted(declared.name), ": asks for ", std::to_string(totals[k]), " units, its ",
                         declared.kind == Resource::Kind::Semaphore ? "permits are " : "burst is ",
                         std::to_string(declared.capacity())})};
        needs[k].amount = static_cast<std::uint32_t>(totals[k]);
    }
    return needs;
}

bool ResourceRegistry::can_take(const Entry& e, std::uint32_t amount, Time now) const {
    if (e.bucket) return e.bucket->tokens_at(now) >= amount;
    return e.declared.permits - e.held >= amount;
}

std::uint32_t ResourceRegistry::available(ResourceId id, Time now) const {
    const Entry& e = entries_[id];
    if (e.bucket) return static_cast<std::uint32_t>(std::floor(e.bucket->tokens_at(now)));
    return e.declared.permits - e.held;
}

bool ResourceRegistry::try_acquire(ResourceId id, std::uint32_t amount, Time now) {
    Entry& e = entries_[id];
    if (e.bucket) return e.bucket->try_take(amount, now);
    if (!can_take(e, amount, now)) return false;
    e.held += amount;
    return true;
}

Acquisition ResourceRegistry::try_acquire_all(std::span<const Need> needs, Time now) {
    // Check everything first: a need that fails after others were taken
    // would have to give bucket tokens back, which a bucket cannot do
    // exactly (its level is a formula of time, see TokenBucket).
    for (std::size_t i = 0; i < needs.size(); ++i) {
        const auto total = total_if_first(needs, i);
        if (!total || *total == 0) continue;
        const Entry& e = entries_[needs[i].resource];
        const bool within = *total <= e.declared.capacity();
        if (within && can_take(e, static_cast<std::uint32_t>(*total), now)) continue;
        Acquisition short_of{false, needs[i].resource, std::nullopt};
        if (e.bucket && within) short_of.retry_at = e.bucket->next_available(static_cast<std::uint32_t>(*total), now);
        return short_of;
    }
    for (std::size_t i = 0; i < needs.size(); ++i) {
        const auto total = total_if_first(needs, i);
        if (total && *total > 0) try_acquire(needs[i].resource, static_cast<std::uint32_t>(*total), now);
    }
    return Acquisition{true, 0, std::nullopt};
}

bool ResourceRegistry::release(ResourceId id, std::uint32_t amount) {
    Entry& e = entries_[id];
    if (e.bucket) return true;
    if (amount > e.held) {
        e.held = 0;
        return false;
    }
    e.held -= amount;
    return true;
}

bool ResourceRegistry::release_all(std::span<const Need> needs) {
    bool ok = true;
    for (const Need& n : needs) ok = release(n.resource, n.amount) && ok;
    return ok;
}

std::optional<std::string> ResourceRegistry::set_rate(ResourceId id, double rate_per_s, Time now) {
    Entry& e = entries_[id];
    const std::string prefix = cat({"resource ", quoted(e.declared.name), ": "});
    if (!e.bucket) return cat({prefix, "set_rate needs a token bucket, not a semaphore"});
    if (auto problem = check_rate(rate_per_s)) return cat({prefix, *problem});
    e.bucket->set_rate(rate_per_s, now);
    return std::nullopt;
}

}  // namespace cronoq::core::detail
