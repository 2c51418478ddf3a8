#pragma once
// cronoq-store's `submit`, `cancel` (and `pause`/`resume` under a leader): a store's client from the command
// line (docs/store.md, cronoq-store; docs/guide/replicas.md), through
// cronoq::BlockingClient, so that the tool commits exactly what an
// application's client would.
#include <string>
#include <vector>

namespace cronoq::store::tool {

/// What `submit` and `cancel` need of the command line.
struct ClientCommandLine {
    std::string store;   ///< a SQLite path or a postgresql:// conninfo
    std::string schema;  ///< PostgreSQL only
    bool json = false;
    std::vector<std::string> command;  ///< "submit" or "cancel", then its arguments
};

/// A mistake in `submit`'s or `cancel`'s arguments (the caller prints the
/// usage and exits 2).
struct ClientUsageError {
    std::string message;
};

/// `submit [<payload JSON> | -] --pool P [--key K] [--priority critical|high|normal|low] [--kind K]`:
/// the payload from the argument, or from stdin when it is `-` or absent.
/// Prints the task's id (with --json `{"id": N}`); exit status 0, or 1 with
/// a message (a SubmitError's name and message, a store error).
int submit_command(const ClientCommandLine& line);

/// `cancel <id|key>`: commits a cancel for the task's leader. Exit status 0
/// when the task had not ended, 1 when it is unknown or already ended.
int cancel_command(const ClientCommandLine& line);

/// `pause <pool>` / `resume <pool>` while a scheduler leads: commits the
/// entry its leader applies (Client::pause / resume). Exit status 0, or 1
/// with a message (a pool no leader declares, a store error).
int pause_command(const ClientCommandLine& line);

}  // namespace cronoq::store::tool
