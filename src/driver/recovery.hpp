#pragma once
// What a scheduler with a store does when it starts leading
// (docs/guide/durability.md, "Recovery"): a fresh engine whose ids start
// above the store's marks, every stored task back through the one admission
// entry (AdmitMode::Restoring), what cannot come back ended failed in the
// store, and the recurring schedules resumed. It has no data of its own
// beyond the scheduler it restores into; every call but `lead` runs inside
// the step `lead` holds (it takes an EngineHeld).
#include <cronoq/core/engine.hpp>
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/store/journal.hpp>

#include "engine_mutex.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cronoq::detail {

class Recovery {
public:
    using WallTime = std::chrono::system_clock::time_point;

    explicit Recovery(SchedulerCore::State& s) : s_(s) {}

    /// The store's `on_leading` report, on its thread: restores what it
    /// read in one step, then lets `open()` return.
    void lead(store::Recovered recovered);

private:
    class Rows;

    void tasks(const EngineHeld& held, store::Recovered& recovered, core::Time now, WallTime wall);
    /// An engine whose ids start above every id a previous leader may have
    /// handed out.
    void start_fresh_engine(const EngineHeld& held, const store::HighWaterMarks& marks);
    /// A task that cannot come back ends failed in the store, and is named in the log.
    void fail(const EngineHeld& held, TaskId id, std::uint32_t attempt, std::string message, WallTime wall);
    void schedules(const EngineHeld& held, std::vector<store::RecurringRow>& rows);
    /// Of the clients' rows recovered with their inbox entries, those that
    /// end Cancelled instead of coming back: row id to why.
    static std::unordered_map<std::uint64_t, std::string> clients_rows_ending(const store::Recovered& recovered);
    /// The configuration clients check their tasks against (docs/store.md,
    /// "Clients"), written in the first commit, before open() returns.
    void write_config(const EngineHeld& held, WallTime wall, std::uint64_t epoch);
    void fair_weights(const EngineHeld& held, const std::vector<store::FairWeightSet>& weights, core::Time now);

    SchedulerCore::State& s_;
};

}  // namespace cronoq::detail
