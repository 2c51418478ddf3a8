#pragma once
// Task, lease and worker identifiers shared by the engine and the driver.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace cronoq {

/// Identifies a submitted task. Unique in the process and monotonically
/// increasing in submission order; 0 is never a valid id.
struct TaskId {
    std::uint64_t value = 0;
    constexpr auto operator<=>(const TaskId&) const = default;
    constexpr explicit operator bool() const { return value != 0; }
};

/// Identifies one attempt of a task. A lease is the fencing token of an
/// attempt: it is never reused, and a report for a lease that is no longer
/// live is ignored.
struct LeaseId {
    std::uint64_t value = 0;
    constexpr auto operator<=>(const LeaseId&) const = default;
    constexpr explicit operator bool() const { return value != 0; }
};

/// Identifies a connected remote worker (docs/remote.md): unique in the process,
/// never reused; 0 is never a valid id.
struct WorkerId {
    std::uint64_t value = 0;
    constexpr auto operator<=>(const WorkerId&) const = default;
    constexpr explicit operator bool() const { return value != 0; }
};

}  // namespace cronoq

template <>
struct std::hash<cronoq::TaskId> {
    std::size_t operator()(cronoq::TaskId id) const noexcept { return std::hash<std::uint64_t>{}(id.value); }
};
template <>
struct std::hash<cronoq::LeaseId> {
    std::size_t operator()(cronoq::LeaseId id) const noexcept { return std::hash<std::uint64_t>{}(id.value); }
};
template <>
struct std::hash<cronoq::WorkerId> {
    std::size_t operator()(cronoq::WorkerId id) const noexcept { return std::hash<std::uint64_t>{}(id.value); }
};
