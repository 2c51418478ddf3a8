#pragma once
// What a client knows of the store's configuration: the union of what the
// shards' leaders wrote when they started leading (docs/guide/replicas.md,
// "Validation"). A client checks a task against it before committing it.
#include <cronoq/store/journal.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::detail {

struct KnownConfig {
    /// False until some leader wrote a configuration: nothing is checked then.
    bool any = false;
    /// False when some configuration could not be read: then a name the
    /// others do not declare is not refused here (the leader checks it).
    bool complete = true;
    /// Pool name -> the shard whose leader declared it.
    std::map<std::string, std::string> pools;
    /// Resource name -> the most one task may ask for, when the leader said.
    std::map<std::string, std::optional<std::uint64_t>> resources;

    /// The union of `configs`. A body that cannot be read is skipped (a
    /// newer leader's format): what it declares is checked at ingestion.
    static KnownConfig of(const std::vector<store::ShardConfig>& configs);
    /// "a, b, c" (for messages).
    std::string pool_names() const;
};

}  // namespace cronoq::detail
