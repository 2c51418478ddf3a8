// What the dashboard reads of a scheduler (<cronoq/detail/inspection.hpp>,
// docs/guide/dashboard.md): the recurring schedules and one task with its
// dependencies. Reads only; the codec (the application's code) runs after
// the engine's mutex.
#include <cronoq/detail/inspection.hpp>
#include <cronoq/detail/scheduler_core.hpp>

#include "scheduler_state.hpp"
#include "task_options.hpp"

namespace cronoq::detail {

namespace {

std::vector<DependencyView> dependencies(const std::vector<Dep>& deps) {
    std::vector<DependencyView> out;
    out.reserve(deps.size());
    for (const Dep& d : deps) {
        const char* when = d.kind == Dep::Kind::OnSuccess   ? "success"
                           : d.kind == Dep::Kind::OnFailure ? "failure"
                                                            : "complete";
        out.push_back(DependencyView{d.ref.id, d.ref.key, when});
    }
    return out;
}

}  // namespace

std::vector<RecurringView> SchedulerCore::recurring_view(std::size_t occurrences) const {
    std::vector<RecurringView> out;
    const auto wall = std::chrono::system_clock::now();
    State::Read read(*s_);
    for (const auto& [name, schedule] : s_->recurring->schedules(s_->held())) {
        RecurringView v;
        v.name = name;
        v.cron = schedule.request.cron;
        v.tz = schedule.request.tz;
        v.pool = schedule.request.task.pool.value_or(s_->pools.empty() ? std::string() : *s_->pools.front().name);
        v.kind = schedule.request.task.kind;
        v.last_fired = schedule.last_fired;
        v.last = schedule.last;
        v.skipped = schedule.skipped;
        // `next` may lie in the past while an occurrence is being taken:
        // list what is still to come.
        std::optional<std::chrono::system_clock::time_point> at =
            schedule.next > wall ? std::optional(schedule.next) : schedule.expr.next_after(wall, schedule.request.tz);
        while (at && v.next.size() < occurrences) {
            v.next.push_back(*at);
            at = schedule.expr.next_after(*at, schedule.request.tz);
        }
        out.push_back(std::move(v));
    }
    return out;
}

std::optional<TaskView> SchedulerCore::task_view(const TaskRef& ref) const {
    if (s_->durable) {
        // The row is the whole truth once committed; a task admitted a
        // moment ago shows from its next commit on.
        auto row = s_->durable->journal().read_task(ref);
        if (!row) return std::nullopt;
        TaskView view;
        try {
            const TaskRequest options = decode_options(row->options);
            view.depends_on = dependencies(options.depends_on);
            view.task.priority = options.priority;
        } catch (const std::exception&) {
            // Options this build cannot read show no dependencies.
        }
        StoredTask& t = view.task;
        t.id = row->id;
        t.key = std::move(row->key);
        t.pool = std::move(row->pool);
        t.kind = std::move(row->kind);
        t.status = row->status;
        t.attempt = row->attempt;
        t.last_error = std::move(row->last_error);
        t.submitted_at = row->submitted_at;
        t.updated_at = row->updated_at;
        t.payload = std::move(row->payload);
        t.output = std::move(row->output);
        t.fair_key = std::move(row->fair_key);
        return view;
    }
    TaskView view;
    ErasedValue payload;
    // Bytes only through a codec the scheduler has: a remote pool's, or the
    // store's (none without a store): a local pool's types need none.
    const std::function<std::string(const void*)>* encode = nullptr;
    {
        State::Read read(*s_);
        const auto task = s_->resolve(ref);
        if (!task) return std::nullopt;
        const auto status = s_->engine.status(*task);
        if (!status) return std::nullopt;
        view.task.id = *task;
        view.task.status = *status;
        view.attempt_known = false;
        TaskRecord* record = from_user(s_->engine.user(*task).value_or(0));
        if (record) {
            view.task.pool = record->pool ? *record->pool : std::string();
            view.task.kind = record->kind;
            view.task.key = record->key();
            if (record->more) view.depends_on = dependencies(record->more->depends_on);
            payload = record->payload;
            for (const PoolRuntime& pool : s_->pools)
                if (pool.name == record->pool && pool.def.codec.encode_payload) encode = &pool.def.codec.encode_payload;
        }
    }
    if (payload && encode) {
        try {
            view.task.payload = (*encode)(payload.get());
        } catch (const std::exception&) {
            // A payload its codec refuses has no preview.
        }
    }
    return view;
}

}  // namespace cronoq::detail
