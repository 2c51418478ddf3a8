// cronoq dashboard: a scheduler with three pools, a cron schedule and tasks
// that fail, served on the web dashboard (docs/guide/dashboard.md).
//
//   dashboard                 a short demo: serves the dashboard on a free
//                             port, runs a batch of tasks (some end
//                             dead-lettered), retries one dead letter,
//                             prints what happened and exits (1 if a claim
//                             does not hold)
//   dashboard --serve [host:port]
//                             serves until SIGINT or SIGTERM (default
//                             127.0.0.1:7071; port 0 picks one), submitting
//                             a few tasks every second; prints
//                             "dashboard: serving on http://..." once ready
//
// The scheduler keeps its state in a SQLite store in a temporary folder
// (removed at exit), so the dashboard shows the store's figures too.
#include <cronoq/cronoq.hpp>
#include <cronoq/dashboard.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include "example_support.hpp"

#include <asio/signal_set.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <string_view>

using namespace std::chrono_literals;
using example::check;
using example::sleep_for;
using cronoq::Result;
using cronoq::TaskContext;
using cronoq::TaskError;
using Sched = cronoq::Scheduler<std::string, std::string>;
using Workers = cronoq::Pool<std::string, std::string>;
using Job = cronoq::Task<std::string>;
using Payload = std::shared_ptr<const std::string>;
namespace fs = std::filesystem;

namespace {

// A payload starting with "broken" fails retryably every time (it ends
// dead-lettered); "invalid" fails permanently (it ends failed); "flaky"
// fails every attempt of the first task that carries it and succeeds in a
// task submitted again (Retry), which is what Retry is for.
struct Flaky {
    std::mutex mu;
    std::map<std::string, cronoq::TaskId> first_task;
    bool in_first_task(const std::string& payload, cronoq::TaskId id) {
        std::lock_guard lock(mu);
        return first_task.try_emplace(payload, id).first->second == id;
    }
};

asio::awaitable<Result<std::string>> work(std::shared_ptr<Flaky> flaky, TaskContext ctx, Payload job,
                                          std::chrono::milliseconds cost) {
    auto working = sleep_for(cost);
    co_await std::move(working);
    if (job->starts_with("broken")) co_return TaskError::retryable("upstream answered 503 for " + *job);
    if (job->starts_with("invalid")) co_return TaskError::permanent("coupon expired: " + *job);
    if (job->starts_with("flaky") && flaky->in_first_task(*job, ctx.id()))
        co_return TaskError::retryable("connection reset by peer");
    co_return "done: " + *job;
}

Workers pool(std::string name, std::size_t workers, std::chrono::milliseconds cost, std::shared_ptr<Flaky> flaky) {
    return Workers(std::move(name))
        .workers(workers, workers, workers)
        .retry(cronoq::RetryPolicy{2, 20ms, 2.0, 100ms, false})
        .executor_fn([flaky, cost](TaskContext ctx, Payload job) { return work(flaky, std::move(ctx), std::move(job), cost); });
}

asio::awaitable<Sched> open_scheduler(asio::io_context& io, const fs::path& dir, std::shared_ptr<Flaky> flaky) {
    auto opening = Sched::builder()
                       .pool(pool("web", 4, 30ms, flaky))
                       .pool(pool("reports", 2, 120ms, flaky))
                       .pool(pool("emails", 2, 60ms, flaky))
                       .store(cronoq::SqliteStore::open(dir / "cronoq.db"))
                       .open(io.get_executor());
    co_return co_await std::move(opening);
}

void submit_batch(Sched& sched, int round) {
    const std::string n = std::to_string(round);
    sched.try_submit(Job("render page " + n).pool("web").kind("render"));
    sched.try_submit(Job("render page " + n + "b").pool("web").kind("render").priority(cronoq::Priority::High));
    sched.try_submit(Job("send welcome " + n).pool("emails").kind("email").key("welcome-" + n));
    if (round % 3 == 0) sched.try_submit(Job("broken invoice " + n).pool("reports").kind("invoice"));
    if (round % 5 == 0) sched.try_submit(Job("invalid coupon " + n).pool("emails").kind("coupon"));
    if (round % 4 == 0) sched.try_submit(Job("flaky export " + n).pool("reports").kind("export").key("export-" + n));
}

void add_schedule(Sched& sched) {
    // Every 5 seconds (6 fields: seconds first).
    sched.add_recurring(cronoq::Recurring<std::string>("digest", "*/5 * * * * *",
                                                       Job("daily digest").pool("reports").kind("digest")));
}

// A payload that must show as text on the page, never run as script.
void submit_markup(Sched& sched) {
    sched.try_submit(Job("<script>window.__cronoq_injected = 1</script><img src=x onerror=\"window.__cronoq_injected = 2\">")
                         .pool("web")
                         .kind("markup")
                         .key("markup-payload"));
}

asio::awaitable<void> demo(asio::io_context& io, fs::path dir) {
    auto flaky = std::make_shared<Flaky>();
    auto opening = open_scheduler(io, dir, flaky);
    Sched sched = co_await std::move(opening);
    auto dashboard = cronoq::Dashboard::start(sched, cronoq::DashboardConfig{"127.0.0.1:0", "", false});
    std::printf("dashboard: serving on http://127.0.0.1:%u/ for the length of the demo\n", dashboard.port());
    add_schedule(sched);
    submit_markup(sched);
    for (int round = 1; round <= 12; ++round) submit_batch(sched, round);
    auto flushed = sched.flush();
    co_await std::move(flushed);
    // Wait for the batch to settle: no ready, running or retrying task left.
    for (int i = 0; i < 200; ++i) {
        std::size_t live = 0;
        for (const auto& p : sched.snapshot().pools) {
            live += p.busy + p.retrying;
            for (std::size_t ready : p.pending) live += ready;
        }
        if (live == 0) break;
        auto pause = sleep_for(25ms);
        co_await std::move(pause);
    }
    auto settled = sched.flush();
    co_await std::move(settled);
    cronoq::TaskQuery dead;
    dead.statuses = {cronoq::TaskStatus::DeadLettered};
    const auto page = sched.query(dead);
    std::printf("dashboard: %zu dead-lettered tasks (broken invoices, flaky exports)\n", page.tasks.size());
    check(page.tasks.size() == 7, "4 broken invoices and 3 flaky exports dead-lettered");
    for (const auto& t : page.tasks) {
        if (!t.key || !t.key->starts_with("export-")) continue;
        auto retried = sched.retry(t.id);
        check(retried.has_value(), "a dead-lettered export can be retried");
        if (!retried) break;
        auto result = retried->result();
        auto output = co_await std::move(result);
        std::printf("dashboard: retried task %llu as task %llu: %s\n", static_cast<unsigned long long>(t.id.value),
                    static_cast<unsigned long long>(retried->id().value), output->c_str());
        check(output->starts_with("done: flaky export"), "the retried export succeeded");
        break;
    }
    check(dashboard.port() != 0, "the dashboard picked a free port");
    dashboard.stop();
    auto down = sched.shutdown(1s);
    co_await std::move(down);
}

asio::awaitable<void> serve(asio::io_context& io, fs::path dir, std::string listen) {
    auto flaky = std::make_shared<Flaky>();
    auto opening = open_scheduler(io, dir, flaky);
    Sched sched = co_await std::move(opening);
    auto dashboard = cronoq::Dashboard::start(sched, cronoq::DashboardConfig{listen, "", false});
    add_schedule(sched);
    submit_markup(sched);
    for (int round = 1; round <= 12; ++round) submit_batch(sched, round);
    std::printf("dashboard: serving on http://127.0.0.1:%u/ until SIGINT or SIGTERM\n", dashboard.port());
    std::fflush(stdout);
    auto stopping = std::make_shared<std::atomic<bool>>(false);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([stopping](std::error_code, int) { stopping->store(true); });
    for (int round = 13; !stopping->load(); ++round) {
        submit_batch(sched, round);
        auto pause = sleep_for(1s);
        co_await std::move(pause);
    }
    std::printf("dashboard: stopping\n");
    dashboard.stop();
    auto down = sched.shutdown(1s);
    co_await std::move(down);
}

}  // namespace

int main(int argc, char** argv) {
    std::string pattern = (fs::temp_directory_path() / "cronoq-dashboard-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) return 2;
    const fs::path dir = pattern;
    int code = 0;
    if (argc >= 2 && std::string_view(argv[1]) == "--serve") {
        const std::string listen = argc >= 3 ? argv[2] : "127.0.0.1:7071";
        asio::io_context io;
        asio::co_spawn(io, serve(io, dir, listen), [&](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                std::printf("dashboard: %s\n", ex.what());
                code = 1;
            }
        });
        io.run();
    } else {
        code = example::run_example("dashboard", [&](asio::io_context& io) { return demo(io, dir); });
    }
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return code;
}
