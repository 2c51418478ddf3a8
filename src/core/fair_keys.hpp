#pragma once
// The fair key names of one engine's tasks, interned
// (docs/design.md#fair-sharing): a task holds its key's id in its slot from
// its admission until it is forgotten, and a name no task holds any more is
// released (its id is reused, so ids stay dense). The key "" is id 0 and
// never held.
//
// Every keyed submission looks its name up here, so the table is flat:
// linear probing over 8-byte buckets of (the hash's low half, id), the names
// by id in one vector. A node-based map walks a chain of separately
// allocated nodes and compares the name in each; here a lookup reads one
// dense bucket line and then the name it matched, which the id is already
// known by (the compare only confirms it, so the key's other lines start
// loading while the name loads).
#include "fair_key_id.hpp"
#include "prefetch.hpp"
#include "runtime/large_allocator.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cronoq::core::detail {

class FairKeyNames {
public:
    FairKeyNames() : names_(1), holds_(1, 0) { rehash(16); }

    /// The hash a name is looked up by: 8 bytes at a time, inline (most
    /// tenant names take one or two steps; std::hash is a call into the
    /// library that costs as much as the lookup itself), the last step an
    /// 8-byte load ending at the name's end (overlapping the one before),
    /// so that no name reads byte by byte past its first 8; a final mix so
    /// that the low bits the table uses depend on every byte.
    static std::uint64_t hash(std::string_view name) {
        const char* p = name.data();
        const std::size_t n = name.size();
        std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
        const auto step = [&h](std::uint64_t w) {
            h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
            h ^= h >> 31;
        };
        if (n >= 8) {
            for (std::size_t i = 0; i + 8 < n; i += 8) step(load8(p + i));
            step(load8(p + n - 8));
        } else if (n >= 4) {
            step(load4(p) | std::uint64_t{load4(p + n - 4)} << 32);
        } else if (n > 0) {
            const auto byte = [p](std::size_t i) { return std::uint64_t{static_cast<unsigned char>(p[i])}; };
            step(byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16);
        }
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        return h;
    }
    /// Starts loading the bucket where a lookup of the name with hash `h`
    /// starts: with thousands of keys it is out of cache, and a submission
    /// has other work to do before it interns its key (admission.cpp).
    void prefetch(std::uint64_t h) const { detail::prefetch(&buckets_[h & mask_]); }

    /// The id of `name`, held once more.
    FairKeyId hold(std::string_view name) { return name.empty() ? 0 : hold(name, hash(name)); }
    /// The same, `h` being hash(name).
    FairKeyId hold(std::string_view name, std::uint64_t h) {
        if (name.empty()) return 0;
        const FairKeyId id = probe(name, h).id;
        if (id == 0) return insert(name, h);
        ++holds_[id];
        return id;
    }
    void release(FairKeyId id) {
        if (id == 0 || --holds_[id] > 0) return;
        erase(hash(names_[id]), id);
        names_[id].clear();
        names_[id].shrink_to_fit();
        free_.push_back(id);
    }
    const std::string& name(FairKeyId id) const { return names_[id]; }
    /// The id of a name held now.
    std::optional<FairKeyId> find(std::string_view name) const {
        if (name.empty()) return FairKeyId{0};
        const FairKeyId id = probe(name, hash(name)).id;
        return id == 0 ? std::nullopt : std::optional(id);
    }
    /// Names held ("" not counted).
    std::size_t size() const { return size_; }

private:
    // Eight buckets a line: 10 000 names take 128 KiB at three quarters
    // full, touched four times as often per line as buckets holding the
    // name inline (32 bytes), so more of the table stays in cache between
    // two submissions of a key. The low half of the hash holds the home
    // bucket's bits (the table never reaches 2^32 buckets: ids are 32-bit)
    // and, above them, a tag that tells most other names apart before the
    // compare.
    struct Bucket {
        std::uint32_t hash = 0;
        FairKeyId id = 0;  // 0: empty
    };
    static_assert(sizeof(Bucket) == 8);
    static std::uint32_t low(std::uint64_t h) { return static_cast<std::uint32_t>(h); }
    static std::uint64_t load8(const char* p) {
        std::uint64_t w;
        std::memcpy(&w, p, sizeof w);
        return w;
    }
    static std::uint32_t load4(const char* p) {
        std::uint32_t w;
        std::memcpy(&w, p, sizeof w);
        return w;
    }
    // The bucket of `name` (hash `h`), or the empty one its probe ends at.
    const Bucket& probe(std::string_view name, std::uint64_t h) const {
        for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
            const Bucket& b = buckets_[i];
            if (b.id == 0 || (b.hash == low(h) && same(names_[b.id], name))) return b;
        }
    }
    // The compare that confirms a hit, inline for names of 8 to 16 bytes
    // (two overlapping loads a side) instead of a call to memcmp.
    static bool same(std::string_view a, std::string_view b) {
        if (a.size() != b.size()) return false;
        const std::size_t n = a.size();
        if (n < 8 || n > 16) return a == b;
        const char* p = a.data();
        const char* q = b.data();
        return ((load8(p) ^ load8(q)) | (load8(p + n - 8) ^ load8(q + n - 8))) == 0;
    }

    // A name not held yet: its own bucket (the table grown first if it
    // would pass three quarters full). Out of line: once per name, while
    // every hit takes the loop above.
    [[gnu::noinline]] FairKeyId insert(std::string_view name, std::uint64_t h) {
        // Up to three quarters full: the table is out of cache with
        // thousands of keys, and the fewer lines and pages it spans, the
        // more of it stays in cache and in the TLB; a lookup of a name
        // held reads under two buckets on average at that load.
        if ((size_ + 1) * 4 > buckets_.size() * 3) rehash(buckets_.size() * 2);
        std::size_t i = h & mask_;
        while (buckets_[i].id != 0) i = (i + 1) & mask_;
        buckets_[i] = Bucket{low(h), allocate(name)};
        ++size_;
        return buckets_[i].id;
    }

    FairKeyId allocate(std::string_view name) {
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
        return id;
    }
    // Backward-shift deletion: no tombstones, so probes stay short.
    void erase(std::uint64_t h, FairKeyId id) {
        std::size_t i = h & mask_;
        while (buckets_[i].id != id) i = (i + 1) & mask_;
        for (std::size_t j = i;;) {
            j = (j + 1) & mask_;
            if (buckets_[j].id == 0) break;
            const std::size_t home = buckets_[j].hash & mask_;
            // An entry may move back to `i` unless its home lies in (i, j].
            const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (stays) continue;
            buckets_[i] = buckets_[j];
            i = j;
        }
        buckets_[i] = Bucket{};
        --size_;
    }
    void rehash(std::size_t count) {
        std::vector<Bucket, LargeAllocator<Bucket>> old(count);
        old.swap(buckets_);
        mask_ = count - 1;
        for (const Bucket& b : old) {
            if (b.id == 0) continue;
            std::size_t i = b.hash & mask_;
            while (buckets_[i].id != 0) i = (i + 1) & mask_;
            buckets_[i] = b;
        }
    }

    std::vector<Bucket, LargeAllocator<Bucket>> buckets_;  // from a line on (a huge page past 2 MiB)
    std::size_t mask_ = 0;
    std::size_t size_ = 0;
    // By id; empty once released. Line-aligned, so that no name (32 bytes,
    // its text inline when short) straddles two lines.
    std::vector<std::string, LargeAllocator<std::string>> names_;
    std::vector<std::uint32_t> holds_;  // tasks holding each id
    std::vector<FairKeyId> free_;
};

}  // namespace cronoq::core::detail
