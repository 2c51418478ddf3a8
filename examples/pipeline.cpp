// cronoq pipeline: a small DAG and a recurring job, printed as they run.
//
//   fetch ──> transform ──> load-warehouse
//     │                └──> load-search
//     └─(on failure)──> cleanup
//
// The DAG is submitted as one all-or-nothing batch whose tasks name each
// other by key. It runs twice: once where every step succeeds (cleanup is
// skipped) and once where fetch fails (cleanup runs; transform and both
// loads are skipped in one step). Then a recurring job with a six-field
// cron expression (every second) runs three occurrences, each a fixed-start
// task keyed `<name>@<UTC start>`. Every status change is printed from an
// event subscription. The program checks what it claims and exits 1 if
// anything happened otherwise.
#include <cronoq/cronoq.hpp>

#include "example_support.hpp"

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using example::check;
using example::sleep_for;
using cronoq::Dep;
using cronoq::Result;
using cronoq::TaskContext;
using cronoq::TaskError;
using cronoq::TaskStatus;

using Sched = cronoq::Scheduler<std::string, std::string>;
using Step = cronoq::Task<std::string>;

namespace {

// The work of every step: a short pause, then a line of output. A step
// whose payload starts with "fail:" fails permanently.
asio::awaitable<Result<std::string>> run_step(TaskContext ctx, std::shared_ptr<const std::string> step) {
    co_await sleep_for(20ms);
    if (step->rfind("fail:", 0) == 0) co_return TaskError::permanent("source unreachable");
    co_return ctx.key().value_or(*step) + " ok";
}

// Prints every status change until the stream closes (at shutdown), and
// keeps the last status per task key.
asio::awaitable<void> print_events(cronoq::EventStream events, std::map<std::string, TaskStatus>& last) {
    while (auto e = co_await events.next()) {
        const std::string name = e->key.value_or("task " + std::to_string(e->id.value));
        last[name] = e->status;
        std::printf("  %-32s %s%s%s\n", name.c_str(), std::string(cronoq::to_string(e->status)).c_str(),
                    e->message.empty() ? "" : ": ", e->message.c_str());
    }
}

// The DAG of one run; `tag` keeps the keys of the two runs apart.
std::vector<Step> pipeline(const std::string& tag, bool fetch_fails) {
    const auto key = [&](const char* step) { return std::string(step) + "/" + tag; };
    return {
        Step("load").key(key("load-warehouse")).depends_on(Dep::on_success(key("transform"))),
        Step("load").key(key("load-search")).depends_on(Dep::on_success(key("transform"))),
        Step("transform").key(key("transform")).depends_on(Dep::on_success(key("fetch"))),
        Step("cleanup").key(key("cleanup")).depends_on(Dep::on_failure(key("fetch"))),
        Step(fetch_fails ? "fail:fetch" : "fetch").key(key("fetch")),
    };
}

asio::awaitable<void> wait_all(std::vector<cronoq::TaskHandle<std::string>>& handles) {
    for (auto& h : handles) {
        try {
            auto out = h.result();
            co_await std::move(out);
        } catch (const cronoq::TaskFailure&) {
            // Failed and skipped steps are expected; their status is checked.
        }
    }
}

asio::awaitable<void> demo(asio::io_context& io) {
    auto sched = Sched::builder()
                     .pool(cronoq::Pool<std::string, std::string>("etl")
                               .workers(1, 4, 4)
                               .retry(cronoq::RetryPolicy::none())
                               .executor_fn(run_step))
                     .build(io.get_executor());
    std::map<std::string, TaskStatus> last;
    asio::co_spawn(io, print_events(sched.subscribe(), last), asio::detached);

    std::printf("run 1: every step succeeds\n");
    auto good = co_await sched.submit_batch(pipeline("run1", false));
    co_await wait_all(good);
    check(last["load-warehouse/run1"] == TaskStatus::Succeeded, "run 1 loaded the warehouse");
    check(last["load-search/run1"] == TaskStatus::Succeeded, "run 1 loaded the search index");
    check(last["cleanup/run1"] == TaskStatus::Skipped, "run 1 skipped the cleanup");

    std::printf("run 2: fetch fails\n");
    auto bad = co_await sched.submit_batch(pipeline("run2", true));
    co_await wait_all(bad);
    check(last["fetch/run2"] == TaskStatus::Failed, "run 2 fetch failed");
    check(last["cleanup/run2"] == TaskStatus::Succeeded, "run 2 ran the cleanup");
    check(last["transform/run2"] == TaskStatus::Skipped && last["load-warehouse/run2"] == TaskStatus::Skipped &&
              last["load-search/run2"] == TaskStatus::Skipped,
          "run 2 skipped transform and both loads");

    std::printf("recurring: \"heartbeat\" every second (6-field cron), three occurrences\n");
    sched.add_recurring(cronoq::Recurring<std::string>("heartbeat", "* * * * * *", Step("ping")));
    int occurrences = 0;
    for (int waited = 0; waited < 100 && occurrences < 3; ++waited) {
        co_await sleep_for(50ms);
        occurrences = 0;
        for (const auto& [name, status] : last)
            if (name.rfind("heartbeat@", 0) == 0 && status == TaskStatus::Succeeded) ++occurrences;
    }
    check(sched.remove_recurring("heartbeat"), "the schedule was registered");
    check(occurrences >= 3, "three occurrences of the recurring job ran");

    co_await sched.shutdown(1s);
}

}  // namespace

int main() { return example::run_example("pipeline", demo); }
