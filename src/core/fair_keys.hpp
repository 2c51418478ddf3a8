#pragma once
// The fair key names of one engine's tasks, interned
// (docs/design.md#fair-sharing): a task holds its key's id in its slot from
// its admission until it is forgotten, and a name no task holds any more is
// released (its id is reused). The key "" is id 0 and never held.
#include "dependencies.hpp"  // StringMap
#include "fair_queue.hpp"    // FairKeyId

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core::detail {

class FairKeyNames {
public:
    FairKeyNames() : names_(1), holds_(1, 0) {}

    /// The id of `name`, held once more.
    FairKeyId hold(std::string_view name) {
        if (name.empty()) return 0;
        if (const auto it = ids_.find(name); it != ids_.end()) {
            ++holds_[it->second];
            return it->second;
        }
        FairKeyId id;
        if (!free_.empty()) {
            id = free_.back();
            free_.pop_back();
            names_[id] = std::string(name);
        } else {
            id = static_cast<FairKeyId>(names_.size());
            names_.emplace_back(name);
            holds_.push_back(0);
        }
        holds_[id] = 1;
        ids_.emplace(names_[id], id);
        return id;
    }
    void release(FairKeyId id) {
        if (id == 0 || --holds_[id] > 0) return;
        ids_.erase(ids_.find(names_[id]));
        names_[id].clear();
        names_[id].shrink_to_fit();
        free_.push_back(id);
    }
    const std::string& name(FairKeyId id) const { return names_[id]; }
    /// The id of a name held now.
    std::optional<FairKeyId> find(std::string_view name) const {
        if (name.empty()) return FairKeyId{0};
        const auto it = ids_.find(name);
        if (it == ids_.end()) return std::nullopt;
        return it->second;
    }
    /// Names held ("" not counted).
    std::size_t size() const { return ids_.size(); }

private:
    std::vector<std::string> names_;    // by id; empty once released
    std::vector<std::uint32_t> holds_;  // tasks holding each id
    std::vector<FairKeyId> free_;
    StringMap<FairKeyId> ids_;
};

}  // namespace cronoq::core::detail
