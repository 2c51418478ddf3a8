#pragma once
// A leader in a child process, both sides: the child's mode `leader`
// (`<test binary> --child leader <site args> lease=<ms> tag=<tag> ...`),
// which each test binary dispatches with its own way of opening a store,
// and the parent's view of it. The child reports on stdout, a pipe to the
// parent, one line per event:
//   W                      it opened the store and waits to lead
//   L <epoch> <first id>   it leads; batch n (from 1) inserts task <first id> + n - 1
//   C <sequence>           every batch up to <sequence> is committed
//   E <kind> <message>     a commit attempt failed (retried)
//   X <reason> <message>   leadership ended; the child exits
//   F <kind> <message>     the store could not be opened; the child exits
#include "store_support.hpp"

#include <cronoq/store/store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cronoq::test {

/// A child's `key=value` arguments (after `--child <mode>`).
using ChildArgs = std::map<std::string, std::string>;
ChildArgs parse_child_args(int argc, char** argv);

/// Writes one line to stdout in one write: lines from the store's thread
/// and the main thread never interleave, and a SIGKILL loses whole lines.
void report_line(const std::string& line);
/// `text` with its line breaks made spaces.
std::string one_line(std::string text);

/// The child side of mode `leader`: opens its store with `open(lease)`,
/// leads and commits batches until leadership ends. Batch n inserts task
/// first + n - 1 (payload "<tag>-<id>", padded with dots to `payload=`
/// bytes), moves the task before it to Running and raises the task-id mark
/// past it; `pace=` ms between batches (0: as fast as the pipeline takes
/// them, at most 256 queued). Exits 0 when released, 2 when the store
/// could not be opened, 3 when fenced, 4 when failed.
int leader_child(const ChildArgs& args, const std::function<std::shared_ptr<Store>(std::chrono::milliseconds)>& open);

/// The parent side: a child in mode `leader` on `site_args` and what it
/// reported so far.
struct LeaderProcess {
    LeaderProcess(const std::vector<std::string>& site_args, const std::string& tag, std::chrono::milliseconds lease,
                  const std::vector<std::string>& extra = {});

    /// Reads lines until one starts with `prefix`, recording what they say.
    std::optional<std::string> until(const std::string& prefix);
    /// Reads what the child wrote before it ended.
    void drain();
    void note(const std::string& line);
    /// Ids of acknowledged tasks: [first, first + acked).
    std::uint64_t end() const { return first + acked; }

    Child child;
    std::uint64_t epoch = 0, first = 0;
    store::Sequence acked = 0;
    std::vector<std::string> errors;
    std::optional<std::string> lost;
};

}  // namespace cronoq::test
