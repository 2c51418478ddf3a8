#pragma once
// From an interned fair key id to the index of its state in a slab, for the
// keys that have one (docs/design.md#fair-sharing, "Cost"). Interned ids are
// small and dense (FairKeyNames reuses released ones), so a plain array
// indexed by id finds a key in one load, where a hash map probes and
// compares: this is on every submission, dispatch and completion of a keyed
// task. The array grows to the largest id held at once and keeps 4 bytes
// per id, never per idle key's state.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace cronoq::core::detail {

class DenseKeyIndex {
public:
    static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

    std::size_t size() const { return size_; }

    const std::uint32_t* find(std::uint32_t key) const {
        if (key >= slots_.size() || slots_[key] == none) return nullptr;
        return &slots_[key];
    }
    /// Precondition: `key` has no entry.
    void insert(std::uint32_t key, std::uint32_t value) {
        if (key >= slots_.size()) slots_.resize(std::max<std::size_t>(key + 1, slots_.size() * 2), none);
        slots_[key] = value;
        ++size_;
    }
    void erase(std::uint32_t key) {
        if (key >= slots_.size() || slots_[key] == none) return;
        slots_[key] = none;
        --size_;
    }

private:
    std::vector<std::uint32_t> slots_;
    std::size_t size_ = 0;
};

}  // namespace cronoq::core::detail
