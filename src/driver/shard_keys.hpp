#pragma once
// Keys held by tasks of other shards of the store (docs/store.md, "Keys
// across shards"). A leader's engine knows the tasks of its own shard only;
// before an in-process submission is admitted, a key it does not know is
// looked up in the store, so that a key is unique across the store as it
// is for clients, and a dependency on a task of another shard gets the
// outcome it gets elsewhere. A store of one shard is never read for it.
#include <cronoq/ids.hpp>
#include <cronoq/store/store.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cronoq::detail {

class ShardKeys {
public:
    /// The store this scheduler leads `shard` of; `retention` is its own
    /// (a terminal task holds its key that long after it ended).
    ShardKeys(std::shared_ptr<Store> store, std::string shard, std::chrono::nanoseconds retention);

    /// A task of another shard that holds a key.
    struct Holder {
        TaskId id;
        std::string pool;
        std::string shard;
    };

    /// Whether the store has shards other than this one, as read at most
    /// `refresh` ago (no mutex of the engine's held: it may read the store).
    bool others();

    /// The keys of one submission or batch looked up in the store: the
    /// pools' shards are read once, at the first key a task of the store
    /// holds, not once a key. Lives on one caller's stack, on one thread.
    class Lookup {
    public:
        /// The task of another shard that holds `key` now, if any. Reads
        /// the store (no mutex of the engine's held); none when it cannot
        /// be read (a warning in the log): the engine's own word stands then.
        std::optional<Holder> holder(const std::string& key);

    private:
        friend ShardKeys;
        explicit Lookup(ShardKeys& keys) : keys_(keys) {}
        ShardKeys& keys_;
        /// (pool, shard) as `Journal::read_shards` gives it, once read.
        std::optional<std::vector<std::pair<std::string, std::string>>> pools_;
    };

    /// A lookup for one submission or batch.
    Lookup lookup() { return Lookup(*this); }

    /// How `shard` describes itself in refusals and skips.
    const std::string& shard() const { return shard_; }

    /// How stale the answer of `others()` may be: a shard that starts
    /// leading is seen by the others' in-process submissions within it.
    static constexpr std::chrono::seconds refresh{1};

private:
    std::shared_ptr<Store> store_;
    std::string shard_;
    std::chrono::nanoseconds retention_;
    std::mutex mu_;
    std::optional<std::chrono::steady_clock::time_point> read_at_;
    bool others_ = false;
};

}  // namespace cronoq::detail
