// The driver core's state (scheduler_state.hpp): its construction, the one
// admission entry, and the small calls every way in shares.
#include "scheduler_state.hpp"

#include <cronoq/logging.hpp>
#include <cronoq/submit_error.hpp>

#include "actions.hpp"
#include "task_options.hpp"

#include <asio/use_awaitable.hpp>
#include <algorithm>
#include <spdlog/spdlog.h>

namespace cronoq::detail {

namespace {

// Passes a group's results on, noting the new tasks to skip at once.
class SkipsNoted final : public Submissions {
public:
    explicit SkipsNoted(Submissions& inner) : inner_(inner) {}
    std::size_t size() const override { return inner_.size(); }
    Submission& at(std::size_t i) override { return inner_.at(i); }
    void result(std::size_t i, Admitted&& r) override {
        if (r && inner_.at(i).skip) skips.emplace_back(r.value()->id(), *inner_.at(i).skip);
        inner_.result(i, std::move(r));
    }
    std::vector<std::pair<TaskId, std::string>> skips;

private:
    Submissions& inner_;
};

}  // namespace

SchedulerCore::State::State(asio::any_io_executor ex, SchedulerOptions opts)
    : executor(std::move(ex)), options(std::move(opts)), clock(options.clock ? options.clock : Clock::steady()),
      engine(options.engine), durable(options.store ? std::make_unique<DurableLink>(options.store) : nullptr),
      shard_keys(options.store ? std::make_unique<ShardKeys>(options.store, options.shard, options.engine.retention)
                               : nullptr),
      encoder(pools, *clock, options.store != nullptr, options.codec,
              options.store ? options.store->journal().max_value_bytes() : 0),
      admission(pools, *clock, encoder, self, durable.get()), launcher(clock->make_timer(executor)) {
    set_engine_modes();
    debug_logging = logger()->should_log(spdlog::level::debug);
}

SchedulerCore::State::~State() {
    // Records the engine still held each refer to themselves: let go of them here.
    auto refs = admission.release_all();
}

void SchedulerCore::State::admit(Submissions& group, AdmitMode mode, core::Time now) {
    if (shutdown.shutting_down(held()) && mode != AdmitMode::Restoring) {
        for (std::size_t i = 0; i < group.size(); ++i)
            group.result(i, {SubmitError::ShuttingDown, "the scheduler is shutting down"});
        return;
    }
    // A task to skip at once (look_across_shards) is rare: only then are
    // the results looked at on their way.
    bool skips = false;
    if (shard_keys && mode != AdmitMode::Restoring)
        for (std::size_t i = 0; i < group.size() && !skips; ++i) skips = group.at(i).skip.has_value();
    if (!skips) return admission.admit(held(), engine, group, mode, now);
    SkipsNoted noted(group);
    admission.admit(held(), engine, noted, mode, now);
    for (auto& [id, why] : noted.skips) engine.skip_blocked(id, std::move(why), now);
}

void SchedulerCore::State::look_across_shards(std::span<Submission> list) {
    if (!shard_keys) return;
    ShardKeys::Lookup lookup = shard_keys->lookup();
    for (Submission& s : list) look_across_shards(s, lookup);
}

void SchedulerCore::State::look_across_shards(Submission& s, ShardKeys::Lookup& lookup) {
    const TaskRequest& r = s.request;
    if (s.refused) return;
    const bool keyed_deps = std::any_of(r.depends_on.begin(), r.depends_on.end(), [](const Dep& d) { return d.ref.key; });
    if (!r.key && !keyed_deps) return;
    if (!shard_keys->others()) return;  // a store of one shard: the engine knows every key
    // Keys the engine knows are its own shard's: the store is read for the others only.
    bool own_key = false, awaits = false;
    std::string pool;
    std::vector<std::string> unknown;
    {
        Read read(*this);
        own_key = r.key && engine.find_key(*r.key);
        for (const Dep& d : r.depends_on)
            if (d.ref.key && !engine.find_key(*d.ref.key)) unknown.push_back(*d.ref.key);
        const auto id = r.pool ? engine.find_pool(*r.pool) : std::optional<core::PoolId>(0);
        if (!id) return;  // the engine refuses it
        const core::PoolConfig& config = pools[*id].def.engine;
        pool = config.name;
        awaits = config.unknown_dependency.awaits();
    }
    const auto held_by = [&](const std::string& key, const ShardKeys::Holder& h) {
        return "the key \"" + key + "\" is held by task " + std::to_string(h.id.value) + " of pool \"" + h.pool +
               "\" of shard \"" + h.shard + "\", but this task's pool \"" + pool + "\" is of shard \"" +
               shard_keys->shard() + "\"";
    };
    if (r.key && !own_key)
        if (const auto h = lookup.holder(*r.key)) {
            s.refused.emplace(SubmitError::Invalid,
                              held_by(*r.key, *h) + ": a leader's handles follow its own shard's tasks (a Client's "
                                                    "submission gives that task)");
            return;
        }
    if (own_key) return;  // the engine gives the key's holder: nothing new to skip
    for (const std::string& key : unknown)
        if (const auto h = lookup.holder(key)) {
            std::string why = "dependency " + held_by(key, *h) + ": dependencies stay within one shard";
            if (!awaits) {
                s.refused.emplace(SubmitError::Invalid, std::move(why));
                return;
            }
            if (!s.skip) s.skip = std::move(why);
        }
}

void SchedulerCore::State::set_engine_modes() {
    // Without a store or a subscriber, the transitions other results imply
    // (Ready at admission, Running at each Dispatch) need no Status action
    // of their own: the record starts Ready, and on(Dispatch) records
    // Running. subscribe() turns them on for good; a new engine comes only
    // before the first subscriber (construction) or with a store.
    engine.report_implied_transitions(options.store != nullptr);
    // A task without a key lets go of its record at its terminal status
    // (on(Status)): the engine forgets the pointer there too.
    engine.release_users_at_end(true);
}

std::optional<TaskId> SchedulerCore::State::resolve(const TaskRef& ref) const {
    if (ref.id) return ref.id;
    return ref.key ? engine.find_key(*ref.key) : std::nullopt;
}

asio::awaitable<bool> SchedulerCore::State::commit_enqueued() {
    store::Sequence seq = 0;
    {
        Read read(*this);
        seq = durable->enqueued(held());
    }
    auto done = WaitList::create();
    delivery.wait_commit(seq, done);
    co_await done->async_wait(asio::use_awaitable);
    co_return delivery.is_committed(seq);
}

std::shared_ptr<HandleState> SchedulerCore::State::stored_handle(const store::TaskRow& row) const {
    auto record = std::make_shared<TaskRecord>(row.id, self);
    record->pool = std::make_shared<const std::string>(row.pool);
    record->kind = row.kind;
    if (row.key) record->request().key = row.key;
    if (row.fair_key) record->request().fair_key = *row.fair_key;
    record->finish(row.status, row.attempt, std::string(row.last_error), encoder.decode_output(row));
    return record;
}

// A retry is admitted in place of the ended task `old`: its dependencies
// were met when it ran (a task whose edge broke ends Skipped, which is not
// retried), so the new task waits for none of them. Encoded here, under the
// mutex, as the old task's options are read under it: the payload is one the
// codec encoded before.
std::shared_ptr<HandleState> SchedulerCore::State::resubmit(TaskId old, TaskRequest&& r) {
    r.depends_on.clear();
    Submission s(r);
    s.replaces = old;
    if (durable) s.encode_with(encoder);
    OneSubmission one(s);
    const auto now = clock->now();
    admit(one, AdmitMode::Replacing, now);
    actions.apply(held(), now);
    auto handle = std::move(one).take();
    if (!handle) throw SubmitException(handle.error(), handle.message());
    return std::move(handle).value();
}

}  // namespace cronoq::detail
