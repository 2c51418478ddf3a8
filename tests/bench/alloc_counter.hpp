// Heap allocations made by the whole benchmark binary, every thread, since it
// started: alloc_counter.cpp replaces the global operator new (every form)
// and std::aligned_alloc, and counts each call. Read the counts before and
// after a timed part; the difference divided by the items is a per-item
// figure that, unlike time, the machine's load does not move.
#pragma once

#include <cstdint>

namespace cronoq_bench {

/// Calls of any global `operator new` (plain, array, nothrow, aligned) so
/// far. Exact once the threads that allocate are quiescent.
std::uint64_t allocations();

/// Calls of std::aligned_alloc so far: in this binary, Asio's recycling
/// allocator taking a new block (coroutine frames, handlers) when its
/// per-thread cache has none to reuse. Never part of `allocations()`.
std::uint64_t aligned_allocations();

}  // namespace cronoq_bench
