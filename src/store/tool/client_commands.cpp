// cronoq-store submit and cancel (client_commands.hpp).
#include "client_commands.hpp"

#include "output.hpp"

#include <cronoq/client.hpp>
#include <cronoq/store/sqlite_store.hpp>
#ifdef CRONOQ_STORE_TOOL_POSTGRES
#include <cronoq/store/postgres_store.hpp>
#endif

#include <nlohmann/json.hpp>

#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace cronoq::store::tool {

namespace {

// The payload travels as its JSON text (codec<nlohmann::json>): what an
// application's codec<P> reads when P converts from JSON.
using ToolClient = BlockingClient<nlohmann::json, nlohmann::json>;

std::shared_ptr<Store> open_store(const ClientCommandLine& line) {
    if (line.store.starts_with("postgresql://") || line.store.starts_with("postgres://")) {
#ifdef CRONOQ_STORE_TOOL_POSTGRES
        PostgresStoreConfig config;
        config.schema = line.schema;
        return PostgresStore::connect(line.store, config);
#else
        throw std::runtime_error("this cronoq-store was not built with PostgreSQL support");
#endif
    }
    return SqliteStore::open(line.store);
}

Priority parse_priority(const std::string& text) {
    if (text == "critical") return Priority::Critical;
    if (text == "high") return Priority::High;
    if (text == "normal") return Priority::Normal;
    if (text == "low") return Priority::Low;
    throw ClientUsageError{"--priority needs critical, high, normal or low, not \"" + text + "\""};
}

// "digits": an id when the store holds one, else a key that is a number
// (as `show` reads it).
bool looks_like_id(const std::string& name) {
    return !name.empty() && name.size() < 20 && name.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

int submit_command(const ClientCommandLine& line) {
    const auto& args = line.command;
    std::optional<std::string> text, pool, key, priority, kind;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](std::optional<std::string>& into) {
            if (i + 1 == args.size()) throw ClientUsageError{arg + " needs a value"};
            into = args[++i];
        };
        if (arg == "--pool") value(pool);
        else if (arg == "--key") value(key);
        else if (arg == "--priority") value(priority);
        else if (arg == "--kind") value(kind);
        else if (arg.starts_with("--")) throw ClientUsageError{"unknown argument " + arg + " for submit"};
        else if (!text) text = arg;
        else throw ClientUsageError{"submit takes one payload (quote the JSON)"};
    }
    if (!pool) throw ClientUsageError{"submit needs --pool <name>"};
    if (!text || *text == "-") text = std::string(std::istreambuf_iterator<char>(std::cin), {});
    nlohmann::json payload;
    try {
        payload = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
        throw ClientUsageError{std::string("the payload is not JSON: ") + e.what()};
    }
    Task<nlohmann::json> task(std::move(payload));
    task.pool(*pool);
    if (key) task.key(*key);
    if (priority) task.priority(parse_priority(*priority));
    if (kind) task.kind(*kind);

    auto client = ToolClient::open(open_store(line));
    try {
        const auto handle = client.submit(std::move(task));
        if (line.json) std::cout << dump(nlohmann::json{{"id", handle.id().value}}, -1) << "\n";
        else std::cout << handle.id().value << "\n";
        return 0;
    } catch (const SubmitException& e) {
        std::cerr << "cronoq-store: not submitted: " << e.what() << "\n";
        return 1;
    }
}

int cancel_command(const ClientCommandLine& line) {
    if (line.command.size() != 2) throw ClientUsageError{"cancel takes one id or key"};
    const std::string& name = line.command[1];
    auto client = ToolClient::open(open_store(line));
    std::optional<TaskRef> ref;
    if (looks_like_id(name)) {
        const TaskId id{std::stoull(name)};
        if (client.get(TaskRef(id))) ref = TaskRef(id);
    }
    if (!ref) ref = TaskRef(name);
    const bool cancelled = client.cancel(*ref);
    if (line.json) std::cout << dump(nlohmann::json{{"cancelled", cancelled}}, -1) << "\n";
    if (!cancelled) {
        std::cerr << "cronoq-store: no task with id or key \"" << name << "\" that has not ended in " << line.store << "\n";
        return 1;
    }
    if (!line.json) std::cerr << "cancel of \"" << name << "\" committed\n";
    return 0;
}

int pause_command(const ClientCommandLine& line) {
    if (line.command.size() != 2) throw ClientUsageError{line.command[0] + " takes one pool"};
    const bool paused = line.command[0] == "pause";
    const std::string& pool = line.command[1];
    auto client = ToolClient::open(open_store(line));
    try {
        if (paused) client.pause(pool);
        else client.resume(pool);
    } catch (const SubmitException& e) {
        std::cerr << "cronoq-store: not " << (paused ? "paused" : "resumed") << ": " << e.what() << "\n";
        return 1;
    }
    if (line.json) std::cout << dump(nlohmann::json{{"pool", pool}, {"paused", paused}}, -1) << "\n";
    else
        std::cerr << line.command[0] << " of pool \"" << pool << "\" committed: the leader applies it\n";
    return 0;
}

}  // namespace cronoq::store::tool
