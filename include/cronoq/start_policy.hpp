#pragma once
// Policies of fixed starts and recurring schedules (docs/guide/time-and-cron.md).
#include <cstdint>
#include <string_view>

namespace cronoq {

/// What a fixed-start task becomes when its start is missed by more than
/// its `start_tolerance` (the pool had no slot, or the process was late).
enum class MissPolicy : std::uint8_t {
    RunLate,  ///< run as soon as possible, ahead of ordinary ready work (default)
    Skip,     ///< end `Missed`
    Fail,     ///< end `Failed`
};

/// What a recurring schedule does when an occurrence is due while the
/// previous one is still live.
enum class OverlapPolicy : std::uint8_t {
    Skip,            ///< create no occurrence (default)
    Allow,           ///< run both
    Queue,           ///< run after the previous one ends, whatever its outcome
    QueueOnSuccess,  ///< run only after the previous one succeeded; after a
                     ///< failure, this and later occurrences are `Skipped`
                     ///< until the schedule is added again
};

std::string_view to_string(MissPolicy p);
std::string_view to_string(OverlapPolicy p);

}  // namespace cronoq
