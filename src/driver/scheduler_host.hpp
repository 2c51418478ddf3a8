#pragma once
// The scheduler as a worker server sees it (docs/remote.md,
// <cronoq/detail/remote_host.hpp>): workers connect to it and report
// through it; it holds the scheduler weakly.
#include <cronoq/detail/remote_host.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include <memory>

namespace cronoq::detail {

/// The host of `core`, whose state is `state` (valid while `core` is).
std::shared_ptr<RemoteHost> make_scheduler_host(std::weak_ptr<SchedulerCore> core, SchedulerCore::State* state);

}  // namespace cronoq::detail
