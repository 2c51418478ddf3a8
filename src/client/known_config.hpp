#pragma once
// What a client knows of the store's configuration: the union of what the
// shards' leaders wrote when they started leading (docs/guide/replicas.md,
// "Validation"), decoded with the leaders' own codec
// (src/driver/shard_config_codec.hpp). A client checks a task against it
// before committing it.
#include <cronoq/store/journal.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cronoq::detail {

struct KnownConfig {
    struct Pool {
        std::string shard;
        bool remote = false;  ///< only a remote pool takes task labels
    };

    /// False until some leader wrote a configuration: nothing is checked then.
    bool any = false;
    /// False when some configuration could not be read (a newer leader's
    /// format): then a name the others do not declare is not refused here
    /// (the leader checks it at ingestion).
    bool complete = true;
    std::map<std::string, Pool> pools;
    /// Resource name -> the most units one task may ask for.
    std::map<std::string, std::uint32_t> resources;

    static KnownConfig of(const std::vector<store::ShardConfig>& configs);
    /// "a, b, c" (for messages).
    std::string pool_names() const;
};

}  // namespace cronoq::detail
