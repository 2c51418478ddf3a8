#pragma once
// The tags a remote lease carries (docs/remote.md): the task's own, and its
// traceparent as the "traceparent" tag unless the task set that tag itself
// (docs/guide/operations.md, "Tracing").
#include <cronoq/task_context.hpp>  // Tags

#include <optional>
#include <string>
#include <utility>

namespace cronoq::detail {

inline Tags lease_tags(const Tags& tags, const std::optional<std::string>& traceparent) {
    Tags out = tags;
    if (!traceparent) return out;
    for (const auto& [name, value] : tags)
        if (name == "traceparent") return out;
    out.emplace_back("traceparent", *traceparent);
    return out;
}

}  // namespace cronoq::detail
