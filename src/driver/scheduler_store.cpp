// A scheduler with a store (docs/guide/durability.md): each step's changes go to the store's
// commit queue, what acknowledges waits for its commit, and the store's
// reports (leading, commits, the end of the lead) come back here.
#include <cronoq/detail/scheduler_core.hpp>
#include <cronoq/logging.hpp>
#include <cronoq/task_failure.hpp>

#include "ingestion.hpp"
#include "recovery.hpp"
#include "scheduler_state.hpp"
#include "shutdown.hpp"

#include <asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

namespace cronoq::detail {

// ---- SchedulerCore -----------------------------------------------------------------------

asio::awaitable<void> SchedulerCore::open() {
    auto self = shared_from_this();
    DurableLink& d = *s_->durable;
    store::LeadHandlers handlers;
    handlers.retention = s_->options.engine.retention;
    handlers.shard = s_->options.shard;
    for (const PoolRuntime& p : s_->pools) handlers.pools.push_back(*p.name);
    d.link()->state = s_.get();  // the journal's thread starts in lead(), below
    handlers.on_leading = [link = d.link()](store::Recovered r) {
        link->with_state([&](State& s) { s.recovery.lead(std::move(r)); });
    };
    handlers.on_commit = [link = d.link()](const store::CommitReport& report) {
        if (report.error) logger()->warn("store: commit failed (retried): {}", report.error->what());
        link->with_state([&](State& s) { s.delivery.committed(report.committed); });
    };
    handlers.on_lost = [link = d.link()](const store::LeadershipLost& lost) {
        link->with_state([&](State& s) { s.shutdown.lead_lost(lost); });
    };
    // Workers that reach this process while it waits are sent to the leader
    // (docs/remote.md, "Serving while waiting"); bound before the store may
    // lead, so that the leader's configuration names its endpoint.
    if (s_->options.worker_endpoint) {
        try {
            s_->endpoint = s_->options.worker_endpoint->start(remote_host());
        } catch (...) {
            // An address in use, a wildcard without advertise: the store was
            // never asked to lead, so the shutdown that follows has no lead
            // to wait for.
            {
                State::Step step(*s_);
                d.end_lead(s_->held());
            }
            d.lost_waits()->set();
            throw;
        }
    }
    // Clients committed something (docs/store.md, "Clients"): a pass is
    // posted; the store's thread never waits for it.
    handlers.on_inbox = [link = d.link()] {
        link->with_state([](State& s) { Ingestion(s).wake(); });
    };
    d.journal().lead(std::move(handlers));
    auto leading = d.leading();
    co_await leading->async_wait(asio::use_awaitable);
    s_->delivery.throw_open_error();
    // What the recovery wrote (rows it ended Failed, attempts it counted
    // lost) is committed before open returns, so that `find` and the
    // store's rows show it from then on (docs/store.md, "The scheduler
    // with a store"). Nothing to wait for when it wrote nothing.
    const bool committed = co_await s_->commit_enqueued();
    s_->delivery.throw_open_error();
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced,
                         "leadership lost before the recovery was committed: " + s_->delivery.lost().value_or(""));
}

asio::awaitable<void> SchedulerCore::flush() {
    if (!s_->durable) co_return;
    auto self = shared_from_this();
    const bool committed = co_await s_->commit_enqueued();
    if (!committed)
        throw StoreError(StoreErrorKind::Fenced, "leadership lost before the commit: " + s_->delivery.lost().value_or(""));
}

asio::awaitable<void> SchedulerCore::leadership_lost() {
    auto self = shared_from_this();
    if (!s_->durable) {
        // Never without a store: an operation that stays pending until the
        // awaiting coroutine is cancelled.
        auto never = WaitList::create();
        co_await never->async_wait(asio::use_awaitable);
        co_return;
    }
    auto lost = s_->durable->lost_waits();
    co_await lost->async_wait(asio::use_awaitable);
}

}  // namespace cronoq::detail
