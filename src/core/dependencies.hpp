#pragma once
// The dependency graph of the engine (docs/guide/dependencies-and-keys.md): who waits on whom. Only
// tasks that have dependents or wait on parents appear here, so ordinary
// tasks pay nothing for it.
#include <cronoq/dep.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/task_status.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cronoq::core::detail {

/// Lets maps keyed by std::string be searched with a string_view.
struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct Edge {
    TaskId child;
    Dep::Kind kind;
};

/// A `Blocked` task: how many edges are not met yet, its live parents (for
/// cycle checks) and the keys it awaits that no task holds yet.
struct BlockedTask {
    std::uint32_t unmet = 0;
    std::vector<TaskId> parents;
    std::vector<std::string> awaited;
};

struct DepGraph {
    std::unordered_map<std::uint64_t, std::vector<Edge>> dependents;  // by live parent id
    StringMap<std::vector<Edge>> awaiting;                            // by key no task holds yet
    std::unordered_map<std::uint64_t, BlockedTask> blocked;           // by child id
    /// Tasks that ended with dependents still to tell, in order; drained by
    /// the engine before it dispatches, so a skip runs down a whole chain
    /// within one call.
    std::vector<std::pair<TaskId, TaskStatus>> resolved;
};

}  // namespace cronoq::core::detail
