#pragma once
// Who holds a lease: the lease row's `holder` text names the process (pid,
// host, a per-process store number) and what tells a live process from an
// ended one on that host (its start time, the host's boot and the pid
// namespace), so that a process of the same host can take the lease of one
// that ended at once instead of waiting for it to run out (docs/store.md,
// "Leadership and fencing").
#include <optional>
#include <string>
#include <string_view>

namespace cronoq::store {

struct HolderIdentity {
    long pid = 0;
    std::string host;
    unsigned instance = 0;  ///< tells the stores of one process apart
    /// Field 22 of /proc/<pid>/stat (clock ticks after boot): a reused pid
    /// has another.
    std::string process_start;
    std::string boot_id;        ///< /proc/sys/kernel/random/boot_id
    std::string pid_namespace;  ///< /proc/self/ns/pid's inode: where `pid` means that process

    /// This process, with a new store number. What cannot be read is "-",
    /// which no liveness check trusts.
    static HolderIdentity current();
    /// "pid <pid> on <host> #<instance> [start <ticks> boot <id> pidns <inode>]"
    std::string text() const;
    /// The fields of `text()`'s format; empty for any other text (a holder
    /// written by an older cronoq, or tampered with).
    static std::optional<HolderIdentity> parse(std::string_view text);
};

/// True only when `holder` names a process that has certainly ended: one of
/// this host (same host name) that ran before the host's last boot, or in
/// this boot and pid namespace whose pid no longer runs, runs another
/// program (another start time) or is a zombie. False whenever it cannot
/// tell (another host or pid namespace, an unreadable /proc, a holder text
/// of another format): the lease then runs out as before.
bool holder_has_ended(std::string_view holder);

}  // namespace cronoq::store
