// cronoq-store: inspects a cronoq store from the command line (docs/store.md,
// cronoq-store).
// Reads in short transactions, so it may run while a scheduler leads; pause and
// resume write the row while none leads, else commit as a client (as submit
// and cancel do) for the leader to apply.
#include "client_commands.hpp"
#include "output.hpp"
#include "sqlite/connection.hpp"
#include "sqlite/lease.hpp"
#include "sqlite/rows.hpp"
#include "sqlite/schema.hpp"
#ifdef CRONOQ_STORE_TOOL_POSTGRES
#include "postgres/store_impl.hpp"
#endif

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace cronoq;
using namespace cronoq::store;

constexpr const char* usage = R"(usage: cronoq-store --store <sqlite path | postgresql:// conninfo> [--schema NAME] [--json] <command>
       cronoq-store --help
commands:
  stats                                     task counts by status, schedules, leader, shards and their leaders
  list [filters] [--limit N] [--cursor C]   tasks, newest first, a page of N (default 100, at most 1000)
      --status S              with status S (repeat it, or S1,S2, for several)
      --pool P  --kind K      in pool P, of kind K
      --key-prefix P          whose key starts with P (never a task without a key)
      --fair-key F            of fair key F ("" for tasks without one)
      --submitted-after T     submitted at or after T; T is UTC RFC 3339
      --submitted-before T      (2026-12-01T10:38:04Z) or an age (2h: two hours ago)
      --cursor C              the next page, as the previous one named it on stderr
  show <id|key>                             one task
  prune --older-than <duration>             remove terminal tasks updated longer ago (7d, 12h, 30m, 45s)
  submit [<payload JSON> | -] --pool P      submit a task as a client (payload from stdin when - or absent);
      [--key K] [--priority critical|high|normal|low] [--kind K]
                                            prints its id once committed
  cancel <id|key>                           commit a cancel for the task's leader (reaches a running attempt)
  pause <pool> | resume <pool>              while no scheduler leads: the next leader starts the pool
                                            paused (or running); while one leads: committed for it to apply
--schema names the PostgreSQL schema of the store (default cronoq).
--json prints machine-readable output on stdout; messages go to stderr.
)";

/// A mistake in the command line: exit status 2 with the usage.
struct UsageError {
    std::string message;
};

/// --help: the usage on stdout, exit status 0.
struct HelpAsked {};

struct Options {
    std::string store;
    std::string schema = "cronoq";
    bool json = false;
    std::vector<std::string> command;
};

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") throw HelpAsked{};
        if (!options.command.empty()) {
            options.command.emplace_back(arg);
        } else if (arg == "--store") {
            if (++i == argc) throw UsageError{"--store needs a path"};
            options.store = argv[i];
        } else if (arg == "--schema") {
            if (++i == argc) throw UsageError{"--schema needs a name"};
            options.schema = argv[i];
        } else if (arg == "--json") {
            options.json = true;
        } else if (arg.starts_with("--")) {
            throw UsageError{"unknown option " + std::string(arg)};
        } else {
            options.command.emplace_back(arg);
        }
    }
    if (options.store.empty()) throw UsageError{"--store is required"};
    if (options.command.empty()) throw UsageError{"no command"};
    return options;
}

/// The value after `--name` among a command's arguments, if given.
std::optional<std::string> flag(const std::vector<std::string>& args, std::string_view name) {
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] != name) continue;
        if (i + 1 == args.size()) throw UsageError{std::string(name) + " needs a value"};
        return args[i + 1];
    }
    return std::nullopt;
}

void expect_arguments(const std::vector<std::string>& args, std::size_t count) {
    if (args.size() != count) throw UsageError{"wrong arguments for " + args[0]};
}

/// A store the commands read: a SQLite file or a PostgreSQL schema.
class Reader {
public:
    virtual ~Reader() = default;
    virtual StoreStats stats() = 0;
    virtual RowPage query(const TaskQuery& query) = 0;
    virtual std::optional<TaskRow> find(const TaskRef& task) = 0;
    virtual std::size_t prune(WallTime cutoff, std::size_t limit) = 0;
    /// False, writing nothing, while a scheduler leads the store.
    virtual bool apply_unless_led(const Change& change) = 0;
};

class SqliteReader final : public Reader {
public:
    explicit SqliteReader(const std::string& file)
        : db_(file, sqlite::Connection::Mode::ReadWrite, std::chrono::seconds(5)) {
        sqlite::verify(db_);
    }
    StoreStats stats() override {
        sqlite::ReadTransaction read(db_);
        return sqlite::read_stats(db_);
    }
    RowPage query(const TaskQuery& query) override {
        const TaskQueryPlan plan(query);
        return plan.page(sqlite::query_tasks(db_, plan));
    }
    std::optional<TaskRow> find(const TaskRef& task) override { return sqlite::find_task(db_, task); }
    std::size_t prune(WallTime cutoff, std::size_t limit) override { return sqlite::prune_tasks(db_, cutoff, limit); }
    bool apply_unless_led(const Change& change) override {
        return sqlite::apply_unless_led(db_, change, std::chrono::system_clock::now());
    }

private:
    sqlite::Connection db_;
};

#ifdef CRONOQ_STORE_TOOL_POSTGRES
class PostgresReader final : public Reader {
public:
    PostgresReader(const std::string& conninfo, const std::string& schema)
        : db_(conninfo, std::chrono::seconds(5)), names_(db_, schema) {
        postgres::verify(db_, names_);
    }
    StoreStats stats() override {
        // One snapshot for every figure.
        db_.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        StoreStats stats = postgres::read_stats(db_, names_);
        db_.exec("COMMIT");
        return stats;
    }
    RowPage query(const TaskQuery& query) override {
        const TaskQueryPlan plan(query);
        return plan.page(postgres::query_tasks(db_, names_, plan));
    }
    std::optional<TaskRow> find(const TaskRef& task) override { return postgres::find_task(db_, names_, task); }
    std::size_t prune(WallTime cutoff, std::size_t limit) override {
        return postgres::prune_tasks(db_, names_, cutoff, limit);
    }
    bool apply_unless_led(const Change& change) override { return postgres::apply_unless_led(db_, names_, change); }

private:
    postgres::Connection db_;
    postgres::Names names_;
};
#endif

int stats(Reader& db, const Options& options) {
    expect_arguments(options.command, 1);
    const StoreStats stats = db.stats();
    if (options.json) std::cout << tool::dump(tool::stats_json(stats)) << "\n";
    else std::cout << tool::stats_text(stats);
    return 0;
}

WallTime parse_when(const std::string& name, const std::string& text) {
    if (const auto at = tool::parse_time(text)) return *at;
    if (const auto age = tool::parse_duration(text)) return store::age_cutoff(std::chrono::system_clock::now(), *age);
    throw UsageError{name + " needs a UTC time such as 2026-12-01T10:38:04Z or an age such as 2h, not \"" + text + "\""};
}

/// list's flags as a TaskQuery (docs/store.md, cronoq-store).
TaskQuery parse_query(const std::vector<std::string>& args) {
    TaskQuery query;
    query.limit = 100;
    for (std::size_t i = 1; i < args.size(); i += 2) {
        const std::string& name = args[i];
        if (i + 1 == args.size()) throw UsageError{name + " needs a value"};
        const std::string& value = args[i + 1];
        if (name == "--status") {
            for (std::size_t from = 0; from <= value.size();) {
                const std::size_t comma = std::min(value.find(',', from), value.size());
                const std::string one = value.substr(from, comma - from);
                const auto status = status_from_string(one);
                if (!status) throw UsageError{"unknown status \"" + one + "\" (e.g. ready, running, dead_lettered)"};
                query.statuses.push_back(*status);
                from = comma + 1;
            }
        } else if (name == "--limit") {
            const auto count = tool::parse_count(value);
            if (!count) throw UsageError{"--limit needs a number of tasks (1 to 1000), not \"" + value + "\""};
            query.limit = *count;
        } else if (name == "--pool") {
            query.pool = value;
        } else if (name == "--kind") {
            query.kind = value;
        } else if (name == "--key-prefix") {
            query.key_prefix = value;
        } else if (name == "--fair-key") {
            query.fair_key = value;
        } else if (name == "--submitted-after") {
            query.submitted_after = parse_when(name, value);
        } else if (name == "--submitted-before") {
            query.submitted_before = parse_when(name, value);
        } else if (name == "--cursor") {
            query.cursor = value;
        } else {
            throw UsageError{"unknown argument " + name + " for list"};
        }
    }
    return query;
}

int list(Reader& db, const Options& options) {
    const TaskQuery query = parse_query(options.command);
    RowPage page;
    try {
        page = db.query(query);
    } catch (const std::invalid_argument&) {
        throw UsageError{"--cursor \"" + query.cursor.value_or("") + "\" is not a cursor a previous list printed"};
    }
    if (options.json) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& row : page.rows) out.push_back(tool::task_json(row));
        std::cout << tool::dump(out) << "\n";
    } else {
        for (const auto& row : page.rows) std::cout << tool::task_line(row) << "\n";
        std::cerr << page.rows.size() << " task(s)\n";
    }
    // On stderr in both modes: --json keeps stdout one JSON array.
    if (page.next_cursor) std::cerr << "more: --cursor " << *page.next_cursor << "\n";
    return 0;
}

int show(Reader& db, const Options& options) {
    expect_arguments(options.command, 2);
    const std::string& name = options.command[1];
    std::optional<TaskRow> row;
    // All digits: an id first, then a key that happens to be a number.
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 20)
        row = db.find(TaskRef(TaskId{std::stoull(name)}));
    if (!row) row = db.find(TaskRef(name));
    if (!row) {
        std::cerr << "cronoq-store: no task with id or key \"" << name << "\" in " << options.store << "\n";
        return 1;
    }
    if (options.json) std::cout << tool::dump(tool::task_json(*row)) << "\n";
    else std::cout << tool::task_details(*row);
    return 0;
}

int prune(Reader& db, const Options& options) {
    const auto& args = options.command;
    const auto text = flag(args, "--older-than");
    if (!text) throw UsageError{"prune needs --older-than <duration>"};
    const auto older_than = tool::parse_duration(*text);
    if (!older_than) throw UsageError{"--older-than needs a duration such as 7d, 12h, 30m or 45s, not \"" + *text + "\""};
    expect_arguments(args, 3);
    const auto cutoff = store::age_cutoff(std::chrono::system_clock::now(), *older_than);
    std::size_t total = 0;
    for (;;) {  // chunks, each its own short transaction
        const std::size_t removed = db.prune(cutoff, 1000);
        total += removed;
        if (removed < 1000) break;
    }
    if (options.json) std::cout << tool::dump(nlohmann::json{{"pruned", total}}, -1) << "\n";
    else std::cerr << "pruned " << total << " terminal task(s)\n";
    return 0;
}

/// pause / resume: while no scheduler leads, the row itself, at once. A
/// leader keeps its pools' state in memory and would not see the row (the
/// next leader would, by surprise): under a leader the change goes through
/// the store's inbox as a client's does, and the leader applies it
/// (docs/store.md, "Paused pools").
int set_paused(Reader& db, const Options& options) {
    expect_arguments(options.command, 2);
    const bool paused = options.command[0] == "pause";
    const std::string& pool = options.command[1];
    if (!db.apply_unless_led(PoolPaused{pool, paused, std::chrono::system_clock::now()})) {
        const tool::ClientCommandLine line{options.store, options.schema, options.json, options.command};
        try {
            return tool::pause_command(line);
        } catch (const tool::ClientUsageError& error) {
            throw UsageError{error.message};
        }
    }
    if (options.json) std::cout << tool::dump(nlohmann::json{{"pool", pool}, {"paused", paused}}, -1) << "\n";
    else
        std::cerr << "pool \"" << pool << "\" " << (paused ? "paused" : "resumed")
                  << " in the store: the next scheduler to lead starts it " << (paused ? "paused" : "running") << "\n";
    return 0;
}

int run(const Options& options) {
    const std::string& command = options.command[0];
    const bool postgresql = options.store.starts_with("postgresql://") || options.store.starts_with("postgres://");
#ifndef CRONOQ_STORE_TOOL_POSTGRES
    if (postgresql) {
        std::cerr << "cronoq-store: this cronoq-store was not built with PostgreSQL support\n";
        return 1;
    }
#endif
    if (command == "submit" || command == "cancel") {
        const tool::ClientCommandLine line{options.store, options.schema, options.json, options.command};
        try {
            return command == "submit" ? tool::submit_command(line) : tool::cancel_command(line);
        } catch (const tool::ClientUsageError& error) {
            throw UsageError{error.message};
        }
    }
    if (command != "stats" && command != "list" && command != "show" && command != "prune" && command != "pause" &&
        command != "resume")
        throw UsageError{"unknown command " + command};
    std::unique_ptr<Reader> reader;
#ifdef CRONOQ_STORE_TOOL_POSTGRES
    if (postgresql) reader = std::make_unique<PostgresReader>(options.store, options.schema);
#endif
    if (!reader) reader = std::make_unique<SqliteReader>(options.store);
    Reader& db = *reader;
    if (command == "stats") return stats(db, options);
    if (command == "list") return list(db, options);
    if (command == "show") return show(db, options);
    if (command == "pause" || command == "resume") return set_paused(db, options);
    return prune(db, options);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const HelpAsked&) {
        std::cout << usage;
        return 0;
    } catch (const UsageError& error) {
        std::cerr << "cronoq-store: " << error.message << "\n" << usage;
        return 2;
    } catch (const std::exception& error) {
        std::cerr << "cronoq-store: " << error.what() << "\n";
        return 1;
    }
}
