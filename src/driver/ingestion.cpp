// The leader's ingestion of clients' submissions and cancels (ingestion.hpp,
// docs/store.md "Clients").
#include "ingestion.hpp"

#include <cronoq/logging.hpp>

#include "actions.hpp"
#include "client_batch.hpp"
#include "pool_pause.hpp"

#include <asio/post.hpp>
#include <spdlog/spdlog.h>

#include <unordered_set>
#include <utility>

namespace cronoq::detail {

namespace {

// Entries read at once; a client's batch larger than this is read whole
// by a larger read.
constexpr std::size_t read_limit = 1024;

bool same_batch(const std::optional<ClientBatchMark>& a, const std::optional<ClientBatchMark>& b) {
    return a && b && a->id == b->id;
}

}  // namespace

// The submissions of one group (a task, or a client's batch), as admit reads
// them; the first refusal is kept (a batch is refused whole).
class Ingestion::Group final : public Submissions {
public:
    explicit Group(std::vector<Submission>& list) : list_(list), handles_(list.size()) {}
    std::size_t size() const override { return list_.size(); }
    Submission& at(std::size_t i) override { return list_[i]; }
    void result(std::size_t i, Admitted&& r) override {
        if (r)
            handles_[i] = std::move(r).value();
        else if (!refused_)
            refused_.emplace(r.error(), r.message());
    }
    const std::optional<std::pair<SubmitError, std::string>>& refused() const { return refused_; }
    const std::shared_ptr<HandleState>& handle(std::size_t i) const { return handles_[i]; }

private:
    std::vector<Submission>& list_;
    std::vector<std::shared_ptr<HandleState>> handles_;
    std::optional<std::pair<SubmitError, std::string>> refused_;
};

void Ingestion::wake() {
    if (!s_.intake.want()) return;
    asio::post(s_.executor, [weak = s_.self] {
        if (auto core = weak.lock()) Ingestion(SchedulerCore::State::of(*core)).run();
    });
}

void Ingestion::room_made(const EngineHeld& held) {
    if (s_.intake.room_made(held)) wake();
}

void Ingestion::run() {
    do {
        std::size_t limit = read_limit;
        for (;;) {
            s_.intake.begin_pass();
            const Read read = pass(limit);
            if (read == Read::Done) break;
            if (read == Read::Incomplete) limit *= 2;  // a batch ran past the read's end: read it whole
        }
    } while (s_.intake.end_passes());
}

void Ingestion::decode(Incoming& in) const {
    if (in.entry.op != store::InboxEntry::Op::Submit) return;
    if (!in.entry.row) {
        in.problem = "decode: the submission has no row";
        return;
    }
    const store::TaskRow& row = *in.entry.row;
    // The mark first: a row of a batch that cannot be read fails its batch.
    try {
        in.batch = client_batch_of(row.options);
        in.replaces = client_retry_of(row.options);
    } catch (const std::exception&) {
        // Unreadable options: the decode below says why.
    }
    try {
        in.request = s_.encoder.decode(row);
    } catch (const std::exception& e) {
        in.problem = std::string("decode: ") + e.what();
        return;
    }
    if (auto why = s_.encoder.stored_refusal(*in.request, row.payload.size()); !why.empty())
        in.problem = "invalid: " + why;
}

Ingestion::Read Ingestion::pass(std::size_t limit) {
    DurableLink& d = *s_.durable;
    // Taken entries committed by now are gone from the read below; those
    // committed later come back in it and are skipped (Intake::prune).
    const store::Sequence committed = s_.delivery.committed_through();
    std::vector<Incoming> in;
    try {
        auto entries = d.journal().read_inbox(limit);
        in.reserve(entries.size());
        for (store::InboxEntry& e : entries) in.push_back(Incoming{std::move(e), std::nullopt, std::nullopt, std::nullopt, {}});
    } catch (const std::exception& e) {
        // The store calls on_inbox again (its safety poll at the latest).
        logger()->warn("store: reading clients' submissions failed: {}", e.what());
        return Read::Done;
    }
    if (in.empty()) return Read::Done;
    // The codecs are the application's code: never under the engine's mutex.
    for (Incoming& i : in) decode(i);

    SchedulerCore::State::Step step(s_);
    // Not leading (yet or any more), or shutting down: the entries stay
    // for this leader's recovery or the next leader's.
    if (!d.writing(s_.held()) || s_.shutdown.shutting_down(s_.held())) return Read::Done;
    s_.intake.prune(s_.held(), committed);
    const auto now = s_.clock->now();
    const auto wall = s_.clock->system_now();
    std::unordered_set<std::uint64_t> cancels;  // tasks a cancel in this read names
    for (const Incoming& i : in)
        if (i.entry.op == store::InboxEntry::Op::Cancel && !s_.intake.taken(s_.held(), i.entry.seq))
            cancels.insert(i.entry.task.value);
    std::vector<std::uint64_t> took;
    std::unordered_set<std::string> waiting;  // pools whose submissions wait for room: later ones wait too (FIFO)
    std::unordered_set<std::uint64_t> left;   // tasks whose submissions wait
    Read read = in.size() == limit ? Read::More : Read::Done;
    for (std::size_t i = 0; i < in.size();) {
        const store::InboxEntry& e = in[i].entry;
        if (s_.intake.taken(s_.held(), e.seq)) {
            ++i;
            continue;
        }
        if (e.op == store::InboxEntry::Op::Pause || e.op == store::InboxEntry::Op::Resume) {
            pool_op(e, now);
            took.push_back(e.seq);
            ++i;
            continue;
        }
        if (e.op == store::InboxEntry::Op::Cancel) {
            // A cancel of a submission that waits for room waits with it.
            if (left.count(e.task.value) == 0) {
                cancel(e.task, now);
                took.push_back(e.seq);
            }
            ++i;
            continue;
        }
        // A client's batch: its rows were committed together, in order.
        std::size_t n = 1;
        if (in[i].batch) {
            while (i + n < in.size() && n < in[i].batch->size && same_batch(in[i + n].batch, in[i].batch)) ++n;
            if (n < in[i].batch->size && i + n == in.size() && in.size() == limit) {
                read = Read::Incomplete;
                break;
            }
        }
        // A task cancelled before it was ingested ends Cancelled without an attempt.
        if (n == 1 && e.row && cancels.count(e.task.value)) {
            end_row(*e.row, TaskStatus::Cancelled, "cancelled before the leader ingested it", wall);
            took.push_back(e.seq);
            ++i;
            continue;
        }
        const std::string pool = e.row ? e.row->pool : std::string();
        if (waiting.count(pool) || !submit(in, i, n, now, wall)) {
            waiting.insert(pool);
            s_.intake.await_room(s_.held());
            for (std::size_t k = i; k < i + n; ++k) left.insert(in[k].entry.task.value);
        } else {
            for (std::size_t k = i; k < i + n; ++k) took.push_back(in[k].entry.seq);
        }
        i += n;
    }
    if (!took.empty()) d.write(s_.held(), store::InboxTaken{took});
    s_.actions.apply(s_.held(), now);
    const store::Sequence seq = d.enqueue_now(s_.held(), s_.engine);
    s_.intake.take(s_.held(), took, seq);
    // Another read finds more only if this one made way for it.
    if (read == Read::More && took.empty()) read = Read::Done;
    return read;
}

bool Ingestion::submit(std::vector<Incoming>& in, std::size_t first, std::size_t n, core::Time now, WallTime wall) {
    // A row that cannot be read or sent fails, and its batch with it, naming why.
    for (std::size_t k = 0; k < n; ++k) {
        const Incoming& bad = in[first + k];
        if (bad.problem.empty()) continue;
        const std::string why = n > 1 ? "task " + std::to_string(k) + ": " + bad.problem : bad.problem;
        for (std::size_t j = 0; j < n; ++j)
            if (const auto& row = in[first + j].entry.row) end_row(*row, TaskStatus::Failed, "ingestion: " + why, wall);
        return true;
    }
    std::vector<Submission> list;
    list.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
        Incoming& i = in[first + k];
        Submission& s = list.emplace_back(*i.request);
        s.row = &*i.entry.row;
        if (i.replaces) s.replaces = *i.replaces;
        s.encoded = Encoded{i.entry.row->payload, {}, i.entry.row->submitted_at};
    }
    Group group(list);
    s_.admit(group, AdmitMode::Ingesting, now);
    if (const auto& refused = group.refused()) {
        switch (refused->first) {
            case SubmitError::Full: return false;  // under Wait: stays in the store until there is room
            case SubmitError::ShuttingDown: return false;
            default: break;
        }
        // Overloaded: a bound the pool sheds at (Reject, or no victim to shed).
        const TaskStatus status = refused->first == SubmitError::Overloaded ? TaskStatus::Shed : TaskStatus::Failed;
        const std::string message =
            "ingestion: " + std::string(to_string(refused->first)) + ": " + refused->second;
        for (std::size_t k = 0; k < n; ++k) end_row(*in[first + k].entry.row, status, message, wall);
        return true;
    }
    // A key the engine knows for another task (a submission of this process
    // the store had not committed when the client's was) keeps it: the
    // client's row ends Cancelled, naming that task (docs/store.md, "Clients").
    for (std::size_t k = 0; k < n; ++k) {
        const store::TaskRow& row = *in[first + k].entry.row;
        const auto& handle = group.handle(k);
        if (handle && handle->id() != row.id)
            end_row(row, TaskStatus::Cancelled,
                    "key \"" + row.key.value_or("") + "\" is held by task " + std::to_string(handle->id().value), wall);
    }
    return true;
}

void Ingestion::end_row(const store::TaskRow& row, TaskStatus status, std::string message, WallTime wall) {
    s_.log([id = row.id, status, message] {
        logger()->info("task {} (a client's) ends {} at ingestion: {}", id.value, to_string(status), message);
    });
    s_.durable->write_ended(s_.held(), row.id, status, 0, std::move(message), wall);
}

// As a local cancel: a task not started ends Cancelled, a running attempt
// is aborted (Actions: the executor's abort, its context, Asio
// cancellation; a remote worker's abort). A task the engine does not hold
// (ended, forgotten) is left as it is.
void Ingestion::cancel(TaskId task, core::Time now) { s_.engine.cancel(task, now); }

// As a local pause or resume; a pool this leader does not declare (a
// client wrote it before any leader wrote its configuration) is dropped,
// said in the log.
void Ingestion::pool_op(const store::InboxEntry& e, core::Time now) {
    const bool paused = e.op == store::InboxEntry::Op::Pause;
    if (set_pool_paused(s_, e.pool, paused, now)) return;
    s_.log([pool = e.pool, paused] {
        logger()->warn("a client's {} of pool \"{}\" is dropped: no pool of that name here", paused ? "pause" : "resume",
                       pool);
    });
}

void Ingestion::recovered_pools(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, core::Time now) {
    s_.holding(held);
    for (const store::InboxEntry& e : inbox)
        if (e.op == store::InboxEntry::Op::Pause || e.op == store::InboxEntry::Op::Resume) pool_op(e, now);
}

void Ingestion::recovered(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, core::Time now) {
    s_.holding(held);
    std::vector<std::uint64_t> took;
    took.reserve(inbox.size());
    for (const store::InboxEntry& e : inbox) {
        if (e.op == store::InboxEntry::Op::Cancel) cancel(e.task, now);
        took.push_back(e.seq);
    }
    if (!took.empty()) s_.durable->write(s_.held(), store::InboxTaken{std::move(took)});
}

void Ingestion::recovered_in(const EngineHeld& held, const std::vector<store::InboxEntry>& inbox, store::Sequence in) {
    std::vector<std::uint64_t> seqs;
    seqs.reserve(inbox.size());
    for (const store::InboxEntry& e : inbox) seqs.push_back(e.seq);
    s_.intake.take(held, seqs, in);
}

}  // namespace cronoq::detail
