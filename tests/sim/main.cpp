// cronoq_sim: scheduling quality of the engine, with and without guaranteed
// shares, against FIFO and strict priority, under virtual time
// (docs/PERFORMANCE.md).
//
//   cronoq_sim [--seed N] [--format=text|markdown] [--quick] [--check]
//              [--tasks=N] [--urgency-window=SECONDS] [--window-factor=F]
//              [--shares=C,H,N,L]
//
// --tasks=N sets the horizon (N arrivals expected at 1.0x load; default
// 100 000); --urgency-window and --window-factor override UrgencyConfig's
// window (5 s) and window_factor (the default) for both engine columns;
// --shares sets the min_share of the cronoq+shares column (default
// 0,0,0.05,0.02). --check also runs the checks (a second run for
// determinism among them); --quick runs a small horizon with the checks and
// a cross-check of the score model. With --quick or --check the program
// exits 1 when a check fails. Tables go to stdout and depend only on the
// seed and the options; the wall time goes to stderr.
#include "report.hpp"
#include "sim.hpp"
#include "tenants.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace cronoq::sim;
namespace core = cronoq::core;

struct Options {
    SimConfig config;
    Format format = Format::Text;
    bool quick = false;
    bool check = false;
    bool tasks_set = false;
};

struct Check {
    std::string name;
    bool pass = true;
    std::string detail;
    void fail(const std::string& why) {
        if (pass) detail = why;
        pass = false;
    }
};

struct Simulation {
    std::string output;
    std::vector<Check> checks;
};

constexpr const char* usage_text =
    "usage: cronoq_sim [--seed N] [--format=text|markdown] [--quick] [--check] [--tasks=N]\n"
    "                  [--urgency-window=SECONDS] [--window-factor=F] [--shares=C,H,N,L]\n";

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "cronoq_sim: %s\n%s", why, usage_text);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--seed" || arg.rfind("--seed=", 0) == 0) {
            std::string value;
            if (arg == "--seed") {
                if (++i >= argc) usage("--seed needs a value");
                value = argv[i];
            } else {
                value = std::string(arg.substr(7));
            }
            char* end = nullptr;
            o.config.seed = std::strtoull(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0') usage("--seed needs an unsigned integer");
        } else if (arg.rfind("--tasks=", 0) == 0) {
            o.config.tasks_at_unit_load = std::strtod(std::string(arg.substr(8)).c_str(), nullptr);
            if (!(o.config.tasks_at_unit_load >= 10)) usage("--tasks=N needs N >= 10");
            o.tasks_set = true;
        } else if (arg.rfind("--urgency-window=", 0) == 0) {
            const double seconds = std::strtod(std::string(arg.substr(17)).c_str(), nullptr);
            if (!(seconds > 0)) usage("--urgency-window=S needs S > 0 (seconds)");
            o.config.engine.urgency.window = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::duration<double>(seconds));
        } else if (arg.rfind("--window-factor=", 0) == 0) {
            char* end = nullptr;
            const std::string value(arg.substr(16));
            o.config.engine.urgency.window_factor = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !(o.config.engine.urgency.window_factor >= 0))
                usage("--window-factor=F needs F >= 0");
        } else if (arg.rfind("--shares=", 0) == 0) {
            const std::string value(arg.substr(9));
            const char* at = value.c_str();
            for (std::size_t c = 0; c < cronoq::priority_count; ++c) {
                char* end = nullptr;
                o.config.shares[c] = std::strtod(at, &end);
                if (end == at || (c + 1 < cronoq::priority_count ? *end != ',' : *end != '\0'))
                    usage("--shares=C,H,N,L needs four fractions");
                at = end + 1;
            }
        } else if (arg == "--format=markdown") {
            o.format = Format::Markdown;
        } else if (arg == "--format=text") {
            o.format = Format::Text;
        } else if (arg == "--quick") {
            o.quick = true;
        } else if (arg == "--check") {
            o.check = true;
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage_text, stdout);
            std::exit(0);
        } else {
            usage("unknown argument");
        }
    }
    // Small enough for a Debug build in a ctest, large enough for the
    // overload ordering to show.
    if (o.quick) {
        if (!o.tasks_set) o.config.tasks_at_unit_load = 1500;
        o.config.verify_model = true;
    }
    return o;
}

std::string shares_text(const std::array<double, cronoq::priority_count>& shares) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "{%g, %g, %g, %g}", shares[0], shares[1], shares[2], shares[3]);
    return buf;
}

std::string preamble(const Options& o) {
    const SimConfig& c = o.config;
    const core::EngineConfig defaults{};
    std::string engine_note = "default docs/guide/ordering.md constants (window factor " +
                              std::to_string(c.engine.urgency.window_factor).substr(0, 4) + ")";
    if (c.engine.urgency.window != defaults.urgency.window)
        engine_note += ", except urgency window " + format_duration(c.engine.urgency.window.count());
    if (c.engine.urgency.window_factor != defaults.urgency.window_factor) engine_note += " (not the default factor)";
    char buf[2600];
    std::snprintf(buf, sizeof buf,
                  "cronoq_sim%s: seed %llu, %zu workers, Poisson arrivals, horizon = %.0f x mean service / workers "
                  "(the arrivals expected at 1.0x load).\n"
                  "Classes Critical %.0f %% / High %.0f %% / Normal %.0f %% / Low %.0f %%; %.0f %% of tasks carry a "
                  "deadline of arrival + %.0f x service; duration_hint = the real service time. Engine: %s; "
                  "cronoq+shares: the same with min_share = %s.\n"
                  "Wait = dispatch - ready (arrival, or the fixed start), percentiles over the tasks ready in the "
                  "first 90 %% of the horizon; \"> x\": a lower bound, tasks not started by the horizon count with "
                  "their wait so far. Starved: classes with a task ready in the first 1 %% of the horizon and not "
                  "started by its end (a wait as long as the run). Max Low wait: the longest Low wait, or \"> age\" of "
                  "the oldest Low task never started; Low not started: Low tasks still waiting at the horizon. "
                  "Deadline hit: deadline tasks whose deadline is within the horizon that succeeded by it. "
                  "Adherence: dispatches with more than one task ready that took a best-scored ready task (docs/guide/ordering.md "
                  "formula, the engine's constants). Util: busy worker-time / (workers x horizon).\n\n",
                  o.quick ? " --quick" : "", static_cast<unsigned long long>(c.seed), c.workers,
                  c.tasks_at_unit_load, 100 * c.class_share[0], 100 * c.class_share[1], 100 * c.class_share[2],
                  100 * c.class_share[3], 100 * c.deadline_share, c.deadline_factor, engine_note.c_str(),
                  shares_text(c.shares).c_str());
    std::string s = buf;
    if (o.format == Format::Markdown) {
        // One paragraph per line in Markdown.
        std::string md;
        for (char ch : s) md += ch == '\n' ? std::string("\n\n") : std::string(1, ch);
        while (md.size() >= 4 && md.compare(md.size() - 4, 4, "\n\n\n\n") == 0) md.resize(md.size() - 2);
        return md;
    }
    return s;
}

std::string trace_name(const Workload& w, double load) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "(%s) %.1fx", w.key, load);
    return buf;
}

/// The checks every run gets: accounting, utilization, the engine's choices.
struct RunChecks {
    Check accounted{"every task accounted for (ended, running, waiting or rejected at the horizon; none lost)"};
    Check utilization{"utilization <= 100 %"};
    Check head_rule{"every engine dispatch is the docs/guide/ordering.md head-comparison choice (shares included)"};
    Check model{"the score model's best score equals a scan of the ready set"};

    void record(const std::string& where, const Trace& trace, const RunResult& run, const Row& row) {
        if (row.arrived != trace.tasks.size() || row.ended + row.running + row.waiting + row.rejected != row.arrived)
            accounted.fail(where + "ended + running + waiting + rejected does not add up");
        if (!run.problems.empty()) accounted.fail(where + run.problems.front());
        if (row.utilization > 1.0) utilization.fail(where + std::to_string(row.utilization));
        if (run.head_rule_mismatches != 0)
            head_rule.fail(where + std::to_string(run.head_rule_mismatches) + " dispatches differ");
        if (run.model_mismatches != 0)
            model.fail(where + std::to_string(run.model_mismatches) + " contended dispatches differ");
    }
};

/// The tenants tables (tenants.hpp) and their checks at 2.0x.
void tenants(const Options& o, std::string& output, std::vector<Check>& checks) {
    const auto& all = workloads();
    Check accounted{"tenants: every task accounted for (ended, running or waiting at the horizon)"};
    for (std::size_t w = 0; w < all.size(); ++w) {
        for (std::size_t l = 0; l < loads.size(); ++l) {
            const TenantTrace trace = make_tenant_trace(all[w], w, loads[l], l, o.config);
            std::vector<TenantRow> rows;
            for (TenantPolicy p : tenant_policies) {
                rows.push_back(run_tenants(trace, p, o.config));
                if (rows.back().unaccounted != 0)
                    accounted.fail(trace_name(all[w], loads[l]) + " " + to_string(p) + ": " +
                                   std::to_string(rows.back().unaccounted) + " tasks lost");
            }
            output += render_tenants(trace, rows, o.format);
            if (loads[l] != 2.0) continue;
            const TenantRow& fifo = rows[0];
            const TenantRow& fair = rows[3];
            const TenantRow& weighted = rows[4];
            const auto within = [](const TenantRow& r, std::size_t t) { return r.ratio(t) >= 0.9 && r.ratio(t) <= 1.1; };
            Check each{std::string("at 2.0x, cronoq+fair gives every tenant its weighted fair share of the dispatches "
                                   "while it waits, within 10 % (") + all[w].key + ")"};
            for (std::size_t t = 0; t < tenant_count; ++t) {
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s%.2f", t == 0 ? "served/owed " : " ", fair.ratio(t));
                each.detail += buf;
                if (!within(fair, t)) each.pass = false;
            }
            checks.push_back(each);
            Check small{std::string("at 2.0x, cronoq+fair's small tenants' p99 wait is at least 10x below FIFO's (") +
                        all[w].key + ")"};
            small.detail = format_duration(fair.small_p99.value) + " vs " + format_duration(fifo.small_p99.value);
            if (fair.small_p99.empty || fifo.small_p99.empty || fair.small_p99.lower_bound ||
                !(10 * fair.small_p99.value <= fifo.small_p99.value))
                small.pass = false;
            checks.push_back(small);
            Check flood{std::string("at 2.0x, with {flood: 3} the flood's share while it waits is within 10 % of its "
                                    "weighted fair share (3/12 while all ten wait) (") + all[w].key + ")"};
            char buf[64];
            std::snprintf(buf, sizeof buf, "served/owed %.3f", weighted.ratio(0));
            flood.detail = buf;
            flood.pass = within(weighted, 0);
            checks.push_back(flood);
        }
    }
    checks.push_back(accounted);
}

Simulation simulate(const Options& o) {
    Simulation sim;
    sim.output = preamble(o);
    RunChecks run_checks;
    std::vector<Check> overload;
    const auto& all = workloads();
    const auto where = [](const Workload& w, double load, Policy p, const char* variant = "") {
        return trace_name(w, load) + variant + " " + to_string(p) + ": ";
    };

    for (std::size_t w = 0; w < all.size(); ++w) {
        for (std::size_t l = 0; l < loads.size(); ++l) {
            const Trace trace = make_trace(all[w], w, loads[l], l, o.config);
            std::vector<Row> rows;
            for (Policy p : policies) {
                const RunResult run = run_policy(trace, p, o.config);
                rows.push_back(summarize(trace, run));
                run_checks.record(where(all[w], loads[l], p), trace, run, rows.back());
            }
            sim.output += render_table(trace, o.config, rows, o.format);
            if (loads[l] != 2.0) continue;
            const Row& ours = rows[0];
            const Row& shares = rows[1];
            const Row& fifo = rows[2];
            Check below{std::string("at 2.0x, cronoq's Critical p99 wait is below FIFO's (") + all[w].key + ")"};
            below.detail = format_duration(ours.p99[0].value) + " vs " + format_duration(fifo.p99[0].value);
            if (ours.p99[0].empty || fifo.p99[0].empty || ours.p99[0].lower_bound || !(ours.p99[0].value < fifo.p99[0].value))
                below.pass = false;
            overload.push_back(below);
            // FIFO's figure may be a lower bound: the true ratio is then larger.
            Check tenth{std::string("at 2.0x, with the shares, Critical's p99 wait is at least 10x below FIFO's (") +
                        all[w].key + ")"};
            tenth.detail = format_duration(shares.p99[0].value) + " vs " + format_duration(fifo.p99[0].value);
            if (shares.p99[0].empty || fifo.p99[0].empty || shares.p99[0].lower_bound ||
                !(10 * shares.p99[0].value <= fifo.p99[0].value))
                tenth.pass = false;
            overload.push_back(tenth);
            Check fed{std::string("at 2.0x, with the shares, no class starves: every task ready in the first 1 % of "
                                  "the horizon started (") +
                      all[w].key + ")"};
            fed.detail = "starved: " + format_starved(shares.starved);
            for (bool starved : shares.starved)
                if (starved) fed.pass = false;
            overload.push_back(fed);
            if (std::string_view(all[w].key) == "c") {
                Check batch{"at 2.0x, with the default window factor, the batch deadline hit rate is at least 95 %"};
                batch.detail = format_percent(ours.deadline_hit, ours.deadline_known);
                if (ours.deadline_known == 0 || 100 * ours.deadline_hit < 95 * ours.deadline_known) batch.pass = false;
                overload.push_back(batch);
            }
        }
    }

    std::vector<VariantRows> fixed, failures;
    for (std::size_t w = 0; w < all.size(); ++w) {
        for (std::size_t l : variant_loads) {
            for (Variant variant : {Variant::FixedStarts, Variant::Failures}) {
                const Trace trace = make_trace(all[w], w, loads[l], l, o.config, variant);
                VariantRows v{trace_name(all[w], loads[l]), trace.tasks.size(), {}};
                const char* label = variant == Variant::FixedStarts ? " fixed starts" : " failures";
                for (Policy p : policies) {
                    const RunResult run = run_policy(trace, p, o.config);
                    v.rows.push_back(summarize(trace, run));
                    run_checks.record(where(all[w], loads[l], p, label), trace, run, v.rows.back());
                }
                // A start whose task arrives while every worker is busy,
                // and before which none frees, cannot be met without
                // preemption: the check counts the others.
                if (variant == Variant::FixedStarts && loads[l] == 2.0 && v.rows[0].starts_known > 0) {
                    for (std::size_t i : {0u, 1u}) {
                        const Row& r = v.rows[i];
                        const std::size_t reachable = r.starts_known - r.starts_unreachable;
                        Check hit{std::string("at 2.0x, ") + to_string(r.policy) +
                                  " meets at least 99 % of the fixed starts a free worker could reach (" + all[w].key +
                                  ")"};
                        hit.detail = format_percent(r.starts_hit_reachable, reachable) + " of " +
                                     format_count(reachable) + "; all starts " +
                                     format_percent(r.starts_hit, r.starts_known) + ", " +
                                     format_count(r.rejected) + " rejected";
                        if (100 * r.starts_hit_reachable < 99 * reachable) hit.pass = false;
                        overload.push_back(hit);
                    }
                }
                (variant == Variant::FixedStarts ? fixed : failures).push_back(std::move(v));
            }
        }
    }
    sim.output += render_fixed_starts(fixed, o.format);
    sim.output += render_failures(failures, o.format);
    tenants(o, sim.output, overload);

    if (o.config.verify_model) {
        // Not printed: long slack (deadline = arrival + 12 x service) puts
        // tasks at the age cap while their urgency still ramps, a region
        // the printed workloads never reach, so the score model and the
        // engine's head rule are checked there too.
        SimConfig slack = o.config;
        slack.deadline_factor = 12;
        const Trace trace = make_trace(all[2], 2, 2.0, 2, slack);
        for (Policy p : policies) {
            const RunResult run = run_policy(trace, p, slack);
            run_checks.record(where(all[2], 2.0, p, ", deadline factor 12,"), trace, run, summarize(trace, run));
        }
    }
    sim.checks = {run_checks.accounted, run_checks.utilization, run_checks.head_rule};
    if (o.config.verify_model) sim.checks.push_back(run_checks.model);
    sim.checks.insert(sim.checks.end(), overload.begin(), overload.end());
    return sim;
}

std::string render_checks(const std::vector<Check>& checks, Format format) {
    std::string out = format == Format::Markdown ? "#### Checks\n\n" : "Checks\n";
    for (const Check& c : checks) {
        out += format == Format::Markdown ? "- " : "  ";
        out += (c.pass ? "PASS  " : "FAIL  ") + c.name;
        if (!c.detail.empty()) out += " [" + c.detail + "]";
        out += "\n";
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) try {
    const Options options = parse(argc, argv);
    const auto started = std::chrono::steady_clock::now();
    Simulation sim = simulate(options);
    const double first_run = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (options.quick || options.check) {
        // Determinism: the same seed gives the same output, byte for byte.
        // The second run skips the slow cross-check of the score model,
        // which prints nothing.
        Options second = options;
        second.config.verify_model = false;
        const Simulation again = simulate(second);
        Check same{"deterministic: a second run with the same seed prints the same tables"};
        if (again.output != sim.output) same.fail("the outputs differ");
        sim.checks.push_back(same);
    }
    std::cout << sim.output << render_checks(sim.checks, options.format) << std::flush;
    std::fprintf(stderr, "cronoq_sim: simulated in %.2f s of wall time (one pass)\n", first_run);
    bool all_pass = true;
    for (const Check& c : sim.checks) all_pass = all_pass && c.pass;
    return (options.quick || options.check) && !all_pass ? 1 : 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "cronoq_sim: %s\n", e.what());
    return 2;
}
