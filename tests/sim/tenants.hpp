#pragma once
// The tenants workload (docs/PERFORMANCE.md, "Fair sharing"): one pool, one
// class, ten tenants. The flood tenant submits 90 % of the tasks, one at a
// time; nine small tenants share the rest, each submitting in bursts (so
// that a small tenant is backlogged for a while, and a share of dispatches
// "while backlogged" means something). The same seeded trace runs through
// FIFO, strict priority (one class: the same order as FIFO), the engine
// without fair keys ("cronoq") and with them ("cronoq+fair"), and with the
// flood weighing 3 ("cronoq+fair w3").
#include "report.hpp"
#include "sim.hpp"

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace cronoq::sim {

inline constexpr std::size_t tenant_count = 10;  ///< tenant 0 is the flood
inline constexpr std::size_t burst_size = 20;    ///< a small tenant's tasks per arrival
inline constexpr double flood_task_share = 0.9;

enum class TenantPolicy { Fifo, Strict, Cronoq, Fair, FairWeighted };
inline constexpr std::array<TenantPolicy, 5> tenant_policies{TenantPolicy::Fifo, TenantPolicy::Strict,
                                                             TenantPolicy::Cronoq, TenantPolicy::Fair,
                                                             TenantPolicy::FairWeighted};
const char* to_string(TenantPolicy p);
/// The flood's weight in the `FairWeighted` column (every other weighs 1).
inline constexpr double flood_weight = 3.0;

struct TenantTask {
    Nanos arrival = 0;
    Nanos service = 0;
    std::uint8_t tenant = 0;
};

struct TenantTrace {
    const Workload* workload = nullptr;
    double load = 0;
    Nanos horizon = 0;
    std::vector<TenantTask> tasks;  ///< by arrival (a burst's tasks at one instant, in order)
};

TenantTrace make_tenant_trace(const Workload& workload, std::size_t workload_index, double load,
                              std::size_t load_index, const SimConfig& config);

/// What one policy did with one tenants trace.
struct TenantRow {
    TenantPolicy policy = TenantPolicy::Fifo;
    /// Per tenant: dispatches, and the weighted fair share of the
    /// dispatches it was owed while backlogged: at each dispatch, every
    /// tenant with a task waiting is owed its weight over the weights of
    /// those waiting. `served / owed` is 1 for an exactly fair policy.
    std::array<std::uint64_t, tenant_count> served{};
    std::array<double, tenant_count> owed{};
    std::uint64_t dispatches = 0;
    Quantile small_p50, small_p99;  ///< waits of the small tenants' tasks
    Quantile flood_p99;
    std::size_t unaccounted = 0;  ///< tasks neither ended, running nor waiting (must be 0)
    double ratio(std::size_t tenant) const { return owed[tenant] > 0 ? served[tenant] / owed[tenant] : 1.0; }
};

/// The weights a policy's dispatches are owed by.
std::array<double, tenant_count> tenant_weights(TenantPolicy p);

TenantRow run_tenants(const TenantTrace& trace, TenantPolicy policy, const SimConfig& config);

std::string render_tenants(const TenantTrace& trace, const std::vector<TenantRow>& rows, Format format);

}  // namespace cronoq::sim
