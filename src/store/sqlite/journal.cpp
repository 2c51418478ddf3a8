// The SQLite half of the store's thread: a look at the lease row, the
// recovery read, and one write transaction per commit (epoch check and
// renewal, changes, prune, giving the lease up).
#include "lease.hpp"
#include "rows.hpp"
#include "store_impl.hpp"

#include <algorithm>

namespace cronoq {

using namespace store;
using namespace store::sqlite;
using std::chrono::nanoseconds;
using std::chrono::system_clock;

SqliteStore::Impl::Impl(std::filesystem::path file, SqliteStoreConfig configuration)
    // A failing file is looked at again every poll interval.
    : PipelineStore(PipelineConfig{configuration.leader_lease, configuration.keep_finished, nanoseconds(0)}),
      path(std::move(file)),
      config(configuration),
      holder(make_holder_name()) {}

SqliteStore::Impl::~Impl() { stop(); }

std::optional<std::uint64_t> SqliteStore::Impl::try_take_over(nanoseconds& next_look) {
    // A read of one row without a lock: cheap enough to poll.
    const WallTime now = system_clock::now();
    const std::string name = shard();
    const LeaderRow row = read_leader(*writer, name);
    if (takeable(row, now)) return try_take(*writer, name, holder, now, config.leader_lease);
    next_look = std::clamp<nanoseconds>(row.expires_at - now, nanoseconds(1), next_look);
    return std::nullopt;
}

Recovered SqliteStore::Impl::recover(std::uint64_t epoch, WallTime terminal_since) {
    Recovered recovered;
    const std::string name = shard();
    {
        // The shard's pools first, so that the load reads the tasks of
        // the pools it claimed (docs/store.md, "Shards").
        WriteTransaction claim(*writer);
        check_and_renew(*writer, name, epoch, system_clock::now(), config.leader_lease);
        recovered.pool_conflict = claim_pools(*writer, name, shard_pools(), system_clock::now());
        if (!recovered.pool_conflict.empty()) return recovered;
        claim.commit();
    }
    // Before the read: whatever clients commit after it signals the inbox.
    seen_version_ = writer->query_int("PRAGMA data_version");
    {
        ReadTransaction read(*writer);
        recovered = load(*writer, name, terminal_since);
    }
    // The load may have taken a while: renew before the scheduler starts.
    WriteTransaction transaction(*writer);
    check_and_renew(*writer, name, epoch, system_clock::now(), config.leader_lease);
    transaction.commit();
    return recovered;
}

bool SqliteStore::Impl::inbox_signalled() {
    // A read of the WAL index, no lock: cheap enough every millisecond.
    if (!data_version_) data_version_.emplace(*writer, "PRAGMA data_version");
    data_version_->step();
    const std::int64_t version = data_version_->int64(0);
    data_version_->reset();
    if (version == seen_version_) return false;
    seen_version_ = version;
    return writer->query_int("SELECT EXISTS (SELECT 1 FROM inbox)") != 0;
}

std::size_t SqliteStore::Impl::commit(const Transaction& t) {
    WriteTransaction transaction(*writer);
    const std::string name = shard();
    check_and_renew(*writer, name, t.epoch, system_clock::now(), config.leader_lease);
    if (!t.batches.empty()) {
        if (!changer_) changer_.emplace(*writer, name);
        for (const Batch* batch : t.batches)
            for (const Change& change : batch->changes) changer_->apply(change);
    }
    std::size_t pruned = 0;
    if (t.prune_before) pruned = prune_tasks(*writer, *t.prune_before, t.prune_limit);
    if (t.give_up) give_up(*writer, name);
    transaction.commit();
    return pruned;
}

}  // namespace cronoq
