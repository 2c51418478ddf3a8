#pragma once
// An open-addressing map from 64-bit ids to 32-bit slot indices. Ids are
// never 0, so 0 marks an empty bucket. Linear probing with backward-shift
// deletion: no tombstones, no allocation per entry.
#include "runtime/large_allocator.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cronoq::core::detail {

class FlatIdMap {
public:
    FlatIdMap() { rehash(16); }

    std::size_t size() const { return size_; }

    /// Precondition: `key` is not present and is not 0. `find(0)` and
    /// `erase(0)` find nothing.
    void insert(std::uint64_t key, std::uint32_t value) {
        if ((size_ + 1) * 2 > buckets_.size()) rehash(buckets_.size() * 2);
        place(key, value);
        ++size_;
        // Keys come from counters, so they mostly arrive in increasing
        // order: the first key of a group announces the next group, whose
        // line (in a large table, long out of cache) starts loading now,
        // a group's worth of inserts before it is written.
        if ((key & (group_size - 1)) == 0) prefetch(key + group_size);
    }

    const std::uint32_t* find(std::uint64_t key) const {
        // 0 marks an empty bucket: it must not match one (a zero TaskId or
        // LeaseId from a caller names nothing).
        if (key == 0) return nullptr;
        for (std::size_t i = home(key);; i = (i + 1) & mask_) {
            const Bucket& b = buckets_[i];
            if (b.key == key) return &b.value;
            if (b.key == 0) return nullptr;
        }
    }

    /// Starts loading the bucket where `key` would be found, for a look-up
    /// known to come soon; changes nothing. The next line too: a group
    /// fills its line, so an erase (which walks to the end of the probe
    /// run) and an insert past a full group read it.
    void prefetch(std::uint64_t key) const {
        const std::size_t i = home(key);
        __builtin_prefetch(&buckets_[i]);
        __builtin_prefetch(&buckets_[(i + buckets_per_line) & mask_]);
    }

    /// Replaces the value of a present key; false if absent.
    bool assign(std::uint64_t key, std::uint32_t value) {
        if (key == 0) return false;
        for (std::size_t i = home(key);; i = (i + 1) & mask_) {
            Bucket& b = buckets_[i];
            if (b.key == key) {
                b.value = value;
                return true;
            }
            if (b.key == 0) return false;
        }
    }

    bool erase(std::uint64_t key) {
        if (key == 0) return false;
        std::size_t i = home(key);
        for (;; i = (i + 1) & mask_) {
            if (buckets_[i].key == key) break;
            if (buckets_[i].key == 0) return false;
        }
        // Shift later members of the probe run back into the hole.
        for (std::size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
            if (buckets_[j].key == 0) break;
            const std::size_t h = home(buckets_[j].key);
            const bool movable = (i <= j) ? (h <= i || h > j) : (h <= i && h > j);
            if (movable) {
                buckets_[i] = buckets_[j];
                i = j;
            }
        }
        buckets_[i] = Bucket{};
        --size_;
        return true;
    }

private:
    struct Bucket {
        std::uint64_t key = 0;
        std::uint32_t value = 0;
    };
    // Buckets start on a cache line (LargeAllocator), so that a group of
    // 4 fills exactly one line.
    static constexpr std::size_t buckets_per_line = cache_line_bytes / sizeof(Bucket);

    // Ids close in value (submitted close in time) share a run of
    // `group` buckets, so a burst of submissions, or of tasks ending in
    // submission order, touches few cache lines; Fibonacci hashing scatters
    // the groups. (Identity hashing would keep all neighbours together but
    // turns the table into one long probe run that backward-shift deletion
    // must walk end to end; ids of several engines interleave, so a group
    // may hold only some of its ids and the rest of it is probe room.)
    static constexpr unsigned group_bits = 2;
    static constexpr std::uint64_t group_size = std::uint64_t{1} << group_bits;
    static_assert(std::size_t{1} << group_bits == buckets_per_line, "a group is one cache line");
    std::size_t home(std::uint64_t key) const {
        const std::uint64_t group = ((key >> group_bits) * 0x9E3779B97F4A7C15ull) >> (shift_ + group_bits);
        return static_cast<std::size_t>(group << group_bits | (key & ((1u << group_bits) - 1)));
    }

    void place(std::uint64_t key, std::uint32_t value) {
        std::size_t i = home(key);
        while (buckets_[i].key != 0) i = (i + 1) & mask_;
        buckets_[i] = Bucket{key, value};
    }

    void rehash(std::size_t count) {
        std::vector<Bucket, LargeAllocator<Bucket>> old;
        old.swap(buckets_);
        buckets_.assign(count, Bucket{});
        mask_ = count - 1;
        shift_ = 64;
        for (std::size_t c = count; c > 1; c >>= 1) --shift_;
        for (const Bucket& b : old)
            if (b.key != 0) place(b.key, b.value);
    }

    std::vector<Bucket, LargeAllocator<Bucket>> buckets_;
    std::size_t size_ = 0;
    std::size_t mask_ = 0;
    unsigned shift_ = 64;
};

}  // namespace cronoq::core::detail
