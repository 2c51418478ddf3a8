// A pool's user Scaler (docs/guide/resources-and-bounds.md, docs/design.md). It is application code, so it runs
// outside the engine's mutex: the engine asks (AskScaler), the step copies
// the question and posts the call to the scheduler's executor, and the
// answer comes back in a step of its own. The engine keeps one question per
// pool open at a time, so a scaler is never called concurrently with
// itself, and each call happens after the previous answer was applied.
#include <cronoq/logging.hpp>

#include "scheduler_state.hpp"

#include <asio/post.hpp>
#include <spdlog/spdlog.h>

namespace cronoq::detail {

void SchedulerCore::State::on(core::AskScaler& q, core::Time, std::chrono::system_clock::time_point) {
    auto question = engine.scaler_question(q.pool);
    if (!question) return;
    // Posted, never called here: this thread holds the engine's mutex, and
    // a scaler may call back into the scheduler (snapshot, submit, ...).
    asio::post(executor, [weak = self, pool = q.pool, input = *question] {
        if (auto core = weak.lock()) core->s_->ask_scaler(pool, input);
    });
}

void SchedulerCore::State::ask_scaler(core::PoolId pool, const ScalerInput& question) {
    PoolRuntime& p = pools[pool];
    std::optional<std::size_t> desired;
    std::string failure;
    try {
        desired = p.def.scaler(question);
    } catch (const std::exception& e) {
        failure = e.what();
    } catch (...) {
        failure = "a non-standard exception";
    }
    // One line when it starts failing and one when it answers again, not
    // one per interval. Only this call touches the flag: the engine's open
    // question orders the calls for one pool.
    if (!desired && !p.scaler_failing)
        logger()->warn("pool \"{}\": the scaler threw ({}); the capacity stays until it answers", *p.name, failure);
    if (desired && p.scaler_failing) logger()->info("pool \"{}\": the scaler answers again", *p.name);
    p.scaler_failing = !desired;
    Step step(*this);
    const auto now = clock->now();
    engine.answer_scaler(pool, desired, now);
    apply(now);
}

}  // namespace cronoq::detail
