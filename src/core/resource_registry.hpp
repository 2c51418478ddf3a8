#pragma once
// The scheduler's shared resources (docs/guide/resources-and-bounds.md): semaphores and token buckets,
// declared by name, used by dense id. Named a registry, not a pool, because
// "pool" is the scheduler's word for a group of workers.
#include "token_bucket.hpp"

#include <cronoq/core/time.hpp>
#include <cronoq/resource.hpp>
#include <cronoq/submit_error.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cronoq::core::detail {

/// Dense index of a declared resource, in declaration order.
using ResourceId = std::uint32_t;

/// A task's request as the user wrote it: `Task::resource(name, amount)`.
struct ResourceRequest {
    std::string_view name;
    std::uint32_t amount = 0;
};

/// A resolved request: what the engine keeps with a task.
struct Need {
    ResourceId resource = 0;
    std::uint32_t amount = 0;
    friend bool operator==(const Need&, const Need&) = default;
};

/// The answer of an all-or-nothing acquisition.
struct Acquisition {
    bool acquired = false;
    /// When not acquired: the first resource (in the order of the needs)
    /// that is short. The caller parks the task on it.
    ResourceId short_of = 0;
    /// When `short_of` is a token bucket: the time at which it will hold
    /// enough tokens if nobody else takes any (a wakeup for the caller);
    /// empty if that never happens (rate 0: wait for `set_rate`). Always
    /// empty for a semaphore: its units come back with a `release`.
    std::optional<Time> retry_at;

    explicit operator bool() const { return acquired; }
};

/// Lookup by id is an index; by name, one hash lookup. Not thread-safe: the
/// engine that owns it serializes calls. Every call that depends on time
/// takes `now`, which never goes backwards.
class ResourceRegistry {
public:
    /// Declares a resource; a token bucket starts full at `now`. Throws
    /// ConfigError naming the field (see check_resource) or a name declared
    /// twice; nothing is added then.
    ResourceId add(Resource resource, Time now);

    std::optional<ResourceId> find(std::string_view name) const;
    std::size_t size() const { return entries_.size(); }
    /// As declared (a token bucket's current rate is `rate(id)`).
    const Resource& declaration(ResourceId id) const { return entries_[id].declared; }
    Resource::Kind kind(ResourceId id) const { return entries_[id].declared.kind; }

    /// Turns a task's requests into needs, summing requests that name the
    /// same resource (the sum is what must be granted at once). Errors:
    /// `UnknownResource` for an undeclared name, `ResourceExceedsCapacity`
    /// when a sum exceeds the permits / burst (it could never be granted).
    /// An amount of 0 asks for nothing and is dropped.
    SubmitResult<std::vector<Need>> resolve(std::span<const ResourceRequest> requests) const;

    /// Free permits of a semaphore, or whole tokens in a bucket at `now`.
    std::uint32_t available(ResourceId id, Time now) const;
    /// Permits of a semaphore held now (0 for a token bucket).
    std::uint32_t held(ResourceId id) const { return entries_[id].held; }

    /// Takes `amount` units of one resource if they are all there.
    bool try_acquire(ResourceId id, std::uint32_t amount, Time now);

    /// All or nothing: takes every need if every one can be met at `now`,
    /// else takes nothing and names the first resource that is short. Needs
    /// naming the same resource are summed.
    Acquisition try_acquire_all(std::span<const Need> needs, Time now);

    /// Gives back the semaphore units of needs acquired earlier; bucket
    /// tokens are consumed at dispatch and not given back. Releasing more
    /// permits than are held is a caller bug: the count stops at 0 and the
    /// call returns false.
    bool release(ResourceId id, std::uint32_t amount);
    bool release_all(std::span<const Need> needs);

    /// Token buckets only (precondition: `kind(id) == TokenBucket`).
    double tokens_at(ResourceId id, Time now) const { return entries_[id].bucket->tokens_at(now); }
    std::optional<Time> next_available(ResourceId id, std::uint32_t amount, Time now) const {
        return entries_[id].bucket->next_available(amount, now);
    }
    double rate(ResourceId id) const { return entries_[id].bucket->rate(); }

    /// Changes a token bucket's rate from `now` on (`Scheduler::set_rate`).
    /// Returns why it cannot: a semaphore, or a rate that is negative, NaN
    /// or infinite; nothing changes then.
    std::optional<std::string> set_rate(ResourceId id, double rate_per_s, Time now);

private:
    struct Entry {
        Resource declared;
        std::uint32_t held = 0;            // semaphore
        std::optional<TokenBucket> bucket;  // token bucket
    };
    struct NameHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };

    bool can_take(const Entry& e, std::uint32_t amount, Time now) const;

    std::vector<Entry> entries_;
    std::unordered_map<std::string, ResourceId, NameHash, std::equal_to<>> by_name_;
};

}  // namespace cronoq::core::detail
