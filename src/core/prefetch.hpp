#pragma once
// Starts loading the cache line at `p`, for a read soon after.
//
// On x86-64 an `asm volatile` prefetch: GCC 12 at -O1 and above removed
// the `__builtin_prefetch` calls the dispatcher makes after a decision
// (the next decision's tasks, the fair order's next keys): not one
// prefetch instruction was left in `Dispatcher::dispatch` of the Release
// build (docs/PERFORMANCE.md, "Fair dispatch"). A volatile asm statement
// is never removed.
namespace cronoq::core::detail {

inline void prefetch(const void* p) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
    __builtin_prefetch(p);
#endif
}

}  // namespace cronoq::core::detail
