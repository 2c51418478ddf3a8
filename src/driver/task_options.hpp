#pragma once
// A task's options as a store keeps them (docs/guide/durability.md): JSON text the store
// never interprets. Relative times are resolved against the submission's
// wall time, so that the text means the same thing after a restart.
#include <cronoq/detail/task_request.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace cronoq::detail {

/// A wall time as the JSON formats keep it: integer nanoseconds since the
/// epoch, exact and readable by any tool that reads JSON.
std::int64_t wall_ns(std::chrono::system_clock::time_point t);

/// Everything of `r` but its payload, pool, kind and key (the store keeps
/// those in columns of their own).
std::string encode_options(const TaskRequest& r, std::chrono::system_clock::time_point wall);

/// The request `encode_options` described, without a payload; `pool`,
/// `kind` and `key` are left for the caller. Throws std::exception on text
/// it cannot read.
TaskRequest decode_options(std::string_view text);

/// For a request decoded from a task submitted at `submitted_at`, to be
/// submitted again (`Scheduler::retry`): its deadline and start, which
/// were resolved at that submission, become relative again, at the same
/// distance from it (a deadline 5 s after the first submission is 5 s
/// after the retry's); a start that was not after the submission is
/// dropped.
void relative_to_submission(TaskRequest& r, std::chrono::system_clock::time_point submitted_at);

}  // namespace cronoq::detail
