#pragma once
// Prefetches that lean on the standard library's layout. Kept here, apart
// from the driver's logic: if the layout differs, the prefetch loads a line
// for nothing and nothing else changes.
namespace cronoq::detail::runtime {

/// Starts loading the reference counts of the `std::shared_ptr` control
/// block that holds `object` in place (`std::make_shared`,
/// `std::allocate_shared`). In libstdc++ those counts sit just before the
/// object, after the control block's vtable pointer: 16 bytes back.
inline void prefetch_shared_count(const void* object) noexcept {
    __builtin_prefetch(static_cast<const char*>(object) - 16);
}

}  // namespace cronoq::detail::runtime
