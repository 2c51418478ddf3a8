// Remote pools in the engine (docs/remote.md), under virtual time: capacity from
// granted slots, labels without head-of-line blocking, nacks, disconnects,
// fencing by worker, lease expiry of a silent worker.
#include "engine_harness.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cronoq::core::test::remote_test {
namespace {

PoolConfig remote_pool(std::string name = "remote") {
    PoolConfig c;
    c.name = std::move(name);
    c.remote = true;
    c.retry = RetryPolicy{3, std::chrono::seconds(1), 2.0, std::chrono::seconds(10), false};
    return c;
}

TaskSpec task(PoolId pool, Labels labels = {}, Priority priority = Priority::Normal) {
    TaskSpec s;
    s.pool = pool;
    s.priority = priority;
    s.labels = std::move(labels);
    return s;
}

class RemoteHarness : public Harness {
public:
    using Harness::Harness;
    WorkerId connect(PoolId pool, std::size_t slots, Labels labels, Time now) {
        const WorkerId w = engine.connect_worker(pool, slots, std::move(labels), now);
        collect_now();
        return w;
    }
    std::size_t set_slots(WorkerId w, std::size_t slots, Time now) {
        const std::size_t granted = engine.set_worker_slots(w, slots, now);
        collect_now();
        return granted;
    }
    void disconnect(WorkerId w, Time now) {
        engine.disconnect_worker(w, now);
        collect_now();
    }
    bool nack(LeaseId lease, Time now, WorkerId from) {
        const bool ok = engine.nack(lease, "busy", now, from);
        collect_now();
        return ok;
    }
    bool complete_from(WorkerId w, LeaseId lease, const Outcome& o, Time now) {
        const bool ok = engine.complete(lease, o, now, w);
        collect_now();
        return ok;
    }
    bool heartbeat_from(WorkerId w, LeaseId lease, Time now) {
        const bool ok = engine.heartbeat(lease, now, w);
        collect_now();
        return ok;
    }

private:
    // As the base harness's own (private) collect().
    void collect_now() {
        std::vector<Action> more;
        engine.drain(more);
        last = more;
        history.insert(history.end(), more.begin(), more.end());
    }
};

std::size_t count_terminal(const std::vector<Status>& statuses) {
    return static_cast<std::size_t>(
        std::count_if(statuses.begin(), statuses.end(), [](const Status& s) { return is_terminal(s.status); }));
}

TEST(RemotePool, CapacityIsTheSlotsGrantedToConnectedWorkers) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    EXPECT_EQ(h.engine.pool_config(pool).lease_ttl, std::optional<Duration>(std::chrono::seconds(30)))
        << "a remote pool without lease_ttl gets 30 s";
    std::vector<TaskId> ids;
    for (int i = 0; i < 5; ++i) ids.push_back(h.submit(task(pool), t0));
    EXPECT_TRUE(h.dispatches().empty()) << "no worker: no capacity";
    EXPECT_EQ(h.engine.counters(pool).capacity, 0u);

    const WorkerId a = h.connect(pool, 2, {}, t0 + 1s);
    ASSERT_TRUE(a);
    ASSERT_EQ(h.dispatches().size(), 2u);
    for (const Dispatch& d : h.dispatches()) EXPECT_EQ(d.worker, a);
    const WorkerId b = h.connect(pool, 1, {}, t0 + 2s);
    ASSERT_EQ(h.dispatches().size(), 1u);
    EXPECT_EQ(h.only_dispatch().worker, b);
    EXPECT_EQ(h.engine.counters(pool).capacity, 3u);
    EXPECT_EQ(h.engine.counters(pool).running, 3u);
    EXPECT_EQ(h.engine.connected_workers(pool), 2u);
    EXPECT_EQ(h.engine.worker_leases(a), 2u);

    // Lowering a worker's slots aborts nothing; its slots retire as leases end.
    EXPECT_EQ(h.set_slots(a, 0, t0 + 3s), 0u);
    EXPECT_TRUE(h.aborts().empty());
    EXPECT_EQ(h.engine.counters(pool).capacity, 1u);
    const LeaseId first = h.lease_of(ids[0]);
    EXPECT_TRUE(h.complete_from(a, first, Outcome::success(), t0 + 4s));
    EXPECT_TRUE(h.dispatches().empty()) << "a drained worker takes no new lease";
    EXPECT_EQ(h.set_slots(a, 4, t0 + 5s), 4u);
    ASSERT_EQ(h.dispatches().size(), 2u) << "the two tasks left queued, now on a's new slots";
    for (const Dispatch& d : h.dispatches()) EXPECT_EQ(d.worker, a);
    EXPECT_EQ(h.engine.worker_leases(a), 3u);
}

TEST(RemotePool, MaxWorkersCapsTheGrantedSlots) {
    RemoteHarness h;
    PoolConfig c = remote_pool();
    c.max_workers = 4;
    const PoolId pool = h.add_pool(c);
    const WorkerId a = h.connect(pool, 3, {}, t0);
    EXPECT_EQ(h.engine.worker_slots(a), 3u);
    const WorkerId b = h.connect(pool, 3, {}, t0);
    EXPECT_EQ(h.engine.worker_slots(b), 1u) << "granted fewer than asked: the cap leaves one";
    EXPECT_EQ(h.set_slots(b, 8, t0), 1u);
    EXPECT_EQ(h.set_slots(a, 1, t0), 1u);
    EXPECT_EQ(h.set_slots(b, 8, t0), 3u);
    EXPECT_EQ(h.engine.counters(pool).capacity, 4u);
    h.disconnect(b, t0);
    EXPECT_EQ(h.engine.counters(pool).capacity, 1u);
    EXPECT_EQ(h.engine.connected_workers(pool), 1u);
}

TEST(RemotePool, ConfigurationAndSpecErrors) {
    Harness h;
    PoolConfig scaled = remote_pool("scaled");
    scaled.autoscale = AutoscaleConfig{};
    EXPECT_THROW(h.add_pool(scaled), ConfigError);
    const PoolId local = h.add_pool(PoolConfig{.name = "local"});
    const PoolId remote = h.add_pool(remote_pool());
    auto r = h.try_submit(task(local, {{"gpu", "1"}}), t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid);
    r = h.try_submit(task(remote, {{"zone", "a"}, {"gpu", "1"}}), t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid) << "labels not sorted by name";
    r = h.try_submit(task(remote, {{"gpu", "1"}, {"gpu", "2"}}), t0);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), SubmitError::Invalid) << "a name twice";
    EXPECT_FALSE(h.engine.connect_worker(local, 4, {}, t0)) << "a local pool takes no worker";
    EXPECT_FALSE(h.engine.connect_worker(7, 4, {}, t0)) << "no such pool";
    h.shutdown(t0, t0);
    EXPECT_FALSE(h.engine.connect_worker(remote, 4, {}, t0)) << "shutting down";
}

TEST(RemotePool, LabelledTaskWaitsWithoutHoldingBackOthers) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId plain = h.connect(pool, 1, {}, t0);
    // The best-ranked task needs a GPU that no worker has: it waits, and
    // the tasks behind it in the same class go to the plain worker.
    const TaskId gpu = h.submit(task(pool, {{"gpu", "a100"}}, Priority::High), t0 + 1s);
    EXPECT_TRUE(h.dispatches().empty());
    const TaskId n1 = h.submit(task(pool, {}, Priority::High), t0 + 2s);
    EXPECT_EQ(h.only_dispatch().task, n1);
    EXPECT_EQ(h.only_dispatch().worker, plain);
    const TaskId n2 = h.submit(task(pool, {}, Priority::High), t0 + 3s);
    EXPECT_TRUE(h.dispatches().empty()) << "the plain worker is busy";
    EXPECT_TRUE(h.complete_from(plain, h.lease_of(n1), Outcome::success(), t0 + 4s));
    EXPECT_EQ(h.only_dispatch().task, n2) << "the GPU task, ahead of it, does not hold it back";

    // A worker with the label (and more) takes it; a worker with another
    // value of it would not have.
    const WorkerId other = h.connect(pool, 1, {{"gpu", "t4"}}, t0 + 5s);
    EXPECT_TRUE(h.dispatches().empty());
    const WorkerId match = h.connect(pool, 1, {{"gpu", "a100"}, {"zone", "eu"}}, t0 + 6s);
    EXPECT_EQ(h.only_dispatch().task, gpu);
    EXPECT_EQ(h.only_dispatch().worker, match);
    EXPECT_EQ(h.engine.worker_leases(other), 0u);
    EXPECT_EQ(h.engine.status(gpu), TaskStatus::Running);
}

TEST(RemotePool, ParkedLabelledTasksRunInOrderAsTheirWorkerFrees) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId gpu = h.connect(pool, 1, {{"gpu", "1"}}, t0);
    std::vector<TaskId> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(h.submit(task(pool, {{"gpu", "1"}}), t0 + Duration(i)));
    EXPECT_EQ(h.lease_of(ids[0]), h.last_dispatch_of(ids[0])->lease);
    // Plain tasks find no plain worker, but the GPU worker may take them
    // too: they compete for its slot by rank with the parked GPU tasks.
    const WorkerId plain = h.connect(pool, 1, {}, t0 + 1s);
    const TaskId p = h.submit(task(pool), t0 + 2s);
    EXPECT_EQ(h.only_dispatch().task, p);
    EXPECT_EQ(h.only_dispatch().worker, plain);
    for (int i = 0; i < 3; ++i) {
        const auto d = h.last_dispatch_of(ids[i]);
        ASSERT_TRUE(d) << "task " << i << " not dispatched in order";
        EXPECT_EQ(d->worker, gpu);
        EXPECT_TRUE(h.complete_from(gpu, d->lease, Outcome::success(), t0 + 10s + Duration(i)));
    }
    for (TaskId id : ids) EXPECT_EQ(h.engine.status(id), TaskStatus::Succeeded);
}

TEST(RemotePool, NackGivesTheLeaseBackAndNeverToTheSameWorker) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId a = h.connect(pool, 1, {}, t0);
    const WorkerId b = h.connect(pool, 1, {}, t0);
    const TaskId busy = h.submit(task(pool), t0);
    ASSERT_EQ(h.only_dispatch().worker, a);
    const TaskId x = h.submit(task(pool), t0 + 1s);
    ASSERT_EQ(h.only_dispatch().worker, b);
    const LeaseId first = h.only_dispatch().lease;
    EXPECT_EQ(h.only_dispatch().attempt, 1u);

    // b nacks while a is busy: x waits for a, never b again.
    EXPECT_FALSE(h.nack(first, t0 + 2s, a)) << "not a's lease";
    EXPECT_TRUE(h.nack(first, t0 + 2s, b));
    EXPECT_TRUE(h.dispatches().empty()) << "b's free slot is not for x";
    EXPECT_EQ(h.engine.status(x), TaskStatus::Ready);
    EXPECT_FALSE(h.complete_from(b, first, Outcome::success(), t0 + 3s)) << "the nacked lease is over";
    EXPECT_TRUE(h.complete_from(a, h.lease_of(busy), Outcome::success(), t0 + 4s));
    const Dispatch again = h.only_dispatch();
    EXPECT_EQ(again.task, x);
    EXPECT_EQ(again.worker, a);
    EXPECT_EQ(again.attempt, 1u) << "a nack does not count an attempt";
    EXPECT_NE(again.lease, first);
    EXPECT_TRUE(h.complete_from(a, again.lease, Outcome::success(), t0 + 5s));
    EXPECT_EQ(count_terminal(h.statuses_of(x)), 1u);
    EXPECT_EQ(h.engine.status(x), TaskStatus::Succeeded);
}

TEST(RemotePool, NackWithNoOtherWorkerFailsTheAttemptAsRetryable) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId a = h.connect(pool, 2, {}, t0);
    h.connect(pool, 2, {{"gpu", "1"}}, t0);  // connected, but without zone eu
    const TaskId x = h.submit(task(pool, {{"zone", "eu"}}), t0);
    EXPECT_TRUE(h.dispatches().empty()) << "no worker in zone eu yet";
    const WorkerId eu = h.connect(pool, 1, {{"zone", "eu"}}, t0 + 1s);
    const Dispatch d = h.only_dispatch();
    EXPECT_EQ(d.worker, eu);
    EXPECT_TRUE(h.nack(d.lease, t0 + 2s, eu));
    const auto st = h.last_statuses_of(x);
    ASSERT_FALSE(st.empty());
    EXPECT_EQ(st.front(), TaskStatus::Retrying) << "no other worker has zone eu";
    EXPECT_NE(h.statuses_of(x).back().message.find("nacked: busy"), std::string::npos);
    // After the backoff the next attempt may go to eu again.
    h.tick(t0 + 3s);
    const Dispatch retry = h.only_dispatch();
    EXPECT_EQ(retry.worker, eu);
    EXPECT_EQ(retry.attempt, 2u) << "the failed attempt counted";
    EXPECT_EQ(h.engine.worker_leases(a), 0u);
}

TEST(RemotePool, DisconnectFailsItsLeasesAndRetriesThemElsewhere) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId a = h.connect(pool, 2, {}, t0);
    const TaskId x = h.submit(task(pool), t0);
    const TaskId y = h.submit(task(pool), t0);
    const LeaseId lx = h.lease_of(x), ly = h.lease_of(y);
    const WorkerId b = h.connect(pool, 2, {}, t0 + 1s);
    h.disconnect(a, t0 + 2s);
    const auto aborts = h.aborts();
    ASSERT_EQ(aborts.size(), 2u);
    for (const Abort& ab : aborts) EXPECT_EQ(ab.reason, AbortReason::WorkerLost);
    EXPECT_EQ(h.engine.status(x), TaskStatus::Retrying);
    EXPECT_EQ(h.statuses_of(x).back().message, "worker disconnected");
    EXPECT_EQ(h.engine.counters(pool).capacity, 2u);
    h.disconnect(a, t0 + 2s);  // idempotent
    EXPECT_TRUE(h.last.empty());

    const std::uint64_t late = h.engine.late_reports();
    EXPECT_FALSE(h.complete_from(a, lx, Outcome::success(), t0 + 2500ms));
    EXPECT_FALSE(h.heartbeat_from(a, ly, t0 + 2500ms));
    EXPECT_EQ(h.engine.late_reports(), late + 2);

    h.tick(t0 + 3s);  // the backoff of 1 s ends
    ASSERT_EQ(h.dispatches().size(), 2u);
    for (const Dispatch& d : h.dispatches()) {
        EXPECT_EQ(d.worker, b);
        EXPECT_EQ(d.attempt, 2u);
        EXPECT_TRUE(h.complete_from(b, d.lease, Outcome::success(), t0 + 4s));
    }
    EXPECT_EQ(count_terminal(h.statuses_of(x)), 1u);
    EXPECT_EQ(count_terminal(h.statuses_of(y)), 1u);
    EXPECT_EQ(h.engine.status(y), TaskStatus::Succeeded);
}

TEST(RemotePool, DisconnectStrandsATaskWaitingAfterANack) {
    RemoteHarness h;
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId a = h.connect(pool, 1, {}, t0);
    const WorkerId b = h.connect(pool, 1, {}, t0);
    const TaskId busy = h.submit(task(pool), t0);
    ASSERT_EQ(h.only_dispatch().worker, a);
    const TaskId x = h.submit(task(pool), t0);
    ASSERT_EQ(h.only_dispatch().worker, b);
    EXPECT_TRUE(h.nack(h.lease_of(x), t0 + 1s, b));  // waits for a
    EXPECT_EQ(h.engine.status(x), TaskStatus::Ready);
    h.disconnect(a, t0 + 2s);  // `busy` fails; x has only b, which nacked it
    EXPECT_EQ(h.engine.status(x), TaskStatus::Retrying);
    EXPECT_NE(h.statuses_of(x).back().message.find("no other connected worker"), std::string::npos);
    h.tick(t0 + 3s);
    // Both come back; b takes one now and, its nacker cleared, x may be it.
    ASSERT_EQ(h.dispatches().size(), 1u);
    const Dispatch d = h.only_dispatch();
    EXPECT_EQ(d.worker, b);
    EXPECT_EQ(d.attempt, 2u);
    EXPECT_TRUE(h.complete_from(b, d.lease, Outcome::success(), t0 + 4s));
    const Dispatch next = h.only_dispatch();
    EXPECT_TRUE(h.complete_from(b, next.lease, Outcome::success(), t0 + 5s));
    EXPECT_EQ(h.engine.status(x), TaskStatus::Succeeded);
    EXPECT_EQ(h.engine.status(busy), TaskStatus::Succeeded);
}

TEST(RemotePool, SilentWorkerLosesItsLeaseAndTimeoutsAbort) {
    RemoteHarness h;
    PoolConfig c = remote_pool();
    c.default_timeout = std::chrono::seconds(100);
    const PoolId pool = h.add_pool(c);
    const WorkerId a = h.connect(pool, 2, {}, t0);
    const TaskId silent = h.submit(task(pool), t0);
    const TaskId beating = h.submit(task(pool), t0);
    const LeaseId silent_lease = h.lease_of(silent);
    EXPECT_EQ(h.last_dispatch_of(silent)->timeout, std::optional<Duration>(std::chrono::seconds(100)));
    EXPECT_TRUE(h.heartbeat_from(a, h.lease_of(beating), t0 + 20s));
    h.tick(t0 + 30s);  // 30 s (the remote default lease_ttl) without a heartbeat
    const auto aborts = h.aborts();
    ASSERT_EQ(aborts.size(), 1u);
    EXPECT_EQ(aborts.front().lease, silent_lease);
    EXPECT_EQ(aborts.front().reason, AbortReason::LeaseExpired);
    EXPECT_EQ(h.engine.status(silent), TaskStatus::Retrying);
    EXPECT_FALSE(h.heartbeat_from(a, silent_lease, t0 + 31s)) << "the expired lease is no longer live";
    EXPECT_EQ(h.engine.status(beating), TaskStatus::Running);
    for (int s = 40; s <= 100; s += 20) h.heartbeat_from(a, h.lease_of(beating), t0 + std::chrono::seconds(s));
    // The heartbeat at 100 s is late: the attempt's timeout came first.
    const auto timed_out = h.last_of<Abort>();
    ASSERT_EQ(timed_out.size(), 1u);
    EXPECT_EQ(timed_out.front().reason, AbortReason::Timeout);
    EXPECT_EQ(h.engine.counters(pool).lease_expired, 2u) << "the silent task's second attempt (from 31 s) went silent too";
    EXPECT_EQ(h.engine.counters(pool).timed_out, 1u);
}

TEST(RemotePool, WorkerSilentPastItsLeaseTakesNoLeaseUntilHeardFrom) {
    RemoteHarness h;
    PoolConfig c = remote_pool();
    c.retry = RetryPolicy{5, std::chrono::seconds(1), 1.0, std::chrono::seconds(1), false};
    const PoolId pool = h.add_pool(c);
    const WorkerId a = h.connect(pool, 2, {}, t0);
    const TaskId stuck = h.submit(task(pool), t0);
    EXPECT_EQ(h.last_dispatch_of(stuck)->worker, a);
    const LeaseId expired = h.lease_of(stuck);
    h.tick(t0 + 30s);  // a sent nothing for a lease TTL: the lease expires
    EXPECT_EQ(h.engine.status(stuck), TaskStatus::Retrying);
    // The retry is due at 31 s and a still has two free slots, but sent
    // nothing since: the task waits instead of going to a again.
    h.tick(t0 + 31s);
    EXPECT_EQ(h.engine.status(stuck), TaskStatus::Ready);
    EXPECT_EQ(h.last_dispatch_of(stuck)->attempt, 1u);
    const WorkerId b = h.connect(pool, 1, {}, t0 + 32s);
    EXPECT_EQ(h.last_dispatch_of(stuck)->worker, b);
    EXPECT_EQ(h.last_dispatch_of(stuck)->attempt, 2u);
    // Anything from a, even a late report, shows it is alive: it takes
    // leases again.
    const TaskId next = h.submit(task(pool), t0 + 33s);
    EXPECT_EQ(h.engine.status(next), TaskStatus::Ready) << "b is full, a is silent";
    EXPECT_FALSE(h.heartbeat_from(a, expired, t0 + 34s));
    EXPECT_EQ(h.last_dispatch_of(next)->worker, a);
    EXPECT_TRUE(h.complete_from(a, h.lease_of(next), Outcome::success(), t0 + 35s));
    EXPECT_TRUE(h.complete_from(b, h.lease_of(stuck), Outcome::success(), t0 + 35s));
    EXPECT_EQ(h.engine.status(next), TaskStatus::Succeeded);
    EXPECT_EQ(h.engine.status(stuck), TaskStatus::Succeeded);
}

TEST(RemotePool, ResourcesApplyAsForLocalPools) {
    EngineConfig config;
    config.resources.push_back(Resource::semaphore("db", 1));
    RemoteHarness h(config);
    const PoolId pool = h.add_pool(remote_pool());
    const WorkerId w = h.connect(pool, 2, {}, t0);
    TaskSpec needs_db = task(pool);
    needs_db.resources.push_back({"db", 1});
    const TaskId a = h.submit(needs_db, t0);
    const TaskId b = h.submit(needs_db, t0 + 1s);
    EXPECT_EQ(h.engine.status(b), TaskStatus::Ready) << "parked on the semaphore, not on a worker";
    const TaskId c = h.submit(task(pool), t0 + 2s);
    EXPECT_EQ(h.only_dispatch().task, c) << "b holds no worker slot while it waits";
    EXPECT_TRUE(h.complete_from(w, h.lease_of(a), Outcome::success(), t0 + 3s));
    EXPECT_EQ(h.only_dispatch().task, b);
    EXPECT_EQ(h.only_dispatch().worker, w);
}

// Random calls over a remote pool: whatever workers do (connect, change
// slots, nack, report, vanish), every lease goes to a connected worker
// whose labels cover the task's, and every task ends exactly once.
TEST(RemotePool, EveryTaskEndsExactlyOnceUnderRandomWorkers) {
    std::size_t nacked = 0, lost = 0;  // coverage: the calls that matter here did happen
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        RemoteHarness h(EngineConfig{.seed = seed});
        PoolConfig c = remote_pool();
        c.retry = RetryPolicy{4, std::chrono::milliseconds(100), 2.0, std::chrono::seconds(1), true};
        const PoolId pool = h.add_pool(c);
        std::uint64_t x = seed * 0x9E3779B97F4A7C15ull;
        const auto next = [&x](std::uint64_t n) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            return x % n;
        };
        const std::vector<Labels> label_sets = {{}, {{"gpu", "1"}}, {{"zone", "eu"}}, {{"gpu", "1"}, {"zone", "eu"}}};
        std::map<std::uint64_t, Labels> connected;      // worker -> labels
        std::map<std::uint64_t, std::pair<TaskId, WorkerId>> leases;  // live, as this test saw them
        std::map<std::uint64_t, Labels> task_labels;
        std::vector<TaskId> submitted;
        Time now = t0;
        std::size_t seen = 0;
        const auto check_new_actions = [&] {
            for (; seen < h.history.size(); ++seen) {
                const Action& act = h.history[seen];
                if (const auto* d = std::get_if<Dispatch>(&act)) {
                    ASSERT_TRUE(connected.count(d->worker.value)) << "lease to a worker not connected";
                    ASSERT_TRUE(std::includes(connected[d->worker.value].begin(), connected[d->worker.value].end(),
                                              task_labels[d->task.value].begin(), task_labels[d->task.value].end()))
                        << "lease to a worker without the task's labels";
                    leases[d->lease.value] = {d->task, d->worker};
                } else if (const auto* ab = std::get_if<Abort>(&act)) {
                    lost += ab->reason == AbortReason::WorkerLost ? 1 : 0;
                    ASSERT_EQ(leases.erase(ab->lease.value), 1u) << "abort of a lease that was not live";
                }
            }
        };
        for (int step = 0; step < 600; ++step) {
            now += std::chrono::milliseconds(next(300));
            switch (next(9)) {
                case 0:
                case 1: {
                    const Labels& l = label_sets[next(label_sets.size())];
                    const TaskId id = h.submit(task(pool, l, static_cast<Priority>(next(4))), now);
                    task_labels[id.value] = l;
                    submitted.push_back(id);
                    break;
                }
                case 2: {
                    if (connected.size() >= 4) break;
                    const Labels& l = label_sets[next(label_sets.size())];
                    connected[h.engine.connect_worker(pool, 1 + next(3), l, now).value] = l;
                    h.tick(now);  // drains into history
                    break;
                }
                case 3: {
                    if (connected.empty()) break;
                    auto it = std::next(connected.begin(), static_cast<long>(next(connected.size())));
                    const WorkerId w{it->first};
                    if (next(2) == 0) {
                        connected.erase(it);
                        h.disconnect(w, now);
                    } else {
                        h.set_slots(w, next(4), now);
                    }
                    break;
                }
                default: {
                    if (leases.empty()) {
                        h.tick(now);
                        break;
                    }
                    auto it = std::next(leases.begin(), static_cast<long>(next(leases.size())));
                    const LeaseId lease{it->first};
                    const WorkerId w = it->second.second;
                    // A report for a lease that expired meanwhile is late:
                    // its Abort (in the history) ends it instead.
                    bool live = false;
                    switch (next(6)) {
                        case 0: nacked += (live = h.nack(lease, now, w)) ? 1 : 0; break;
                        case 1: live = h.complete_from(w, lease, Outcome::retryable("flaky"), now); break;
                        case 2: live = h.complete_from(w, lease, Outcome::permanent("bad"), now); break;
                        case 3: live = h.complete_from(w, lease, Outcome::cancelled(), now); break;
                        default: live = h.complete_from(w, lease, Outcome::success(), now); break;
                    }
                    if (live) leases.erase(lease.value);
                    break;
                }
            }
            check_new_actions();
            if (HasFatalFailure()) return;
        }
        // A worker that can take anything drains what is left.
        const Labels all = {{"gpu", "1"}, {"zone", "eu"}};
        connected[h.engine.connect_worker(pool, 4, all, now).value] = all;
        h.tick(now);
        for (int round = 0; round < 10000 && h.engine.live_tasks() > 0; ++round) {
            check_new_actions();
            if (HasFatalFailure()) return;
            now += std::chrono::milliseconds(500);
            if (leases.empty()) {
                h.tick(now);
                continue;
            }
            const auto [lease, who] = *leases.begin();
            if (h.complete_from(who.second, LeaseId{lease}, Outcome::success(), now)) leases.erase(lease);
        }
        EXPECT_EQ(h.engine.live_tasks(), 0u) << "seed " << seed;
        for (TaskId id : submitted) EXPECT_EQ(count_terminal(h.statuses_of(id)), 1u) << "seed " << seed << " task " << id.value;
    }
    EXPECT_GT(nacked, 20u);
    EXPECT_GT(lost, 20u);
}

}  // namespace
}  // namespace cronoq::core::test::remote_test
