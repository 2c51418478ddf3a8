// The statements a commit's changes become. Parsing, planning and running
// a statement costs the server far more than writing one row, so the
// inserts and transitions between two changes of another kind (a run) are
// at most two statements over arrays (binary format, through unnest): one
// INSERT, then one UPDATE. The arrays are unnested in the select list, not
// in FROM: a function in FROM is materialised into a tuplestore first
// (spilled to a temporary file past work_mem), in the select list its rows
// stream into the table (docs/postgres.md, "What it costs").
//
// Within a run a task's changes fold into one row: a transition sets every
// column it carries (an output it lacks is kept), so a transition of a task
// inserted in the same run goes into the inserted row, and a later
// transition of a task supersedes an earlier one. The commit's transaction
// applies them all at once, so nobody sees the states in between, and the
// folded row is what the changes one after the other would have left. The
// UPDATE touches only tasks not inserted in the run, so it commutes with
// the INSERT. Other kinds end the run and are one statement each, in order.
#include "store_impl.hpp"

#include "../shard_ranges.hpp"

#include <endian.h>

#include <limits>
#include <type_traits>

namespace cronoq::store::postgres {

namespace {

// Element types (pg_type.oid), which array_recv checks.
constexpr std::uint32_t int8_oid = 20;
constexpr std::uint32_t text_oid = 25;
constexpr std::uint32_t bytea_oid = 17;

/// A run ends past this many bytes of values: each statement is one
/// protocol message (at most 1 GiB); a single larger row still goes.
constexpr std::size_t run_bytes = std::size_t{16} << 20;

/// One array parameter in PostgreSQL's binary format (array_recv): the
/// elements as they come, the header once the length is known.
class Column {
public:
    explicit Column(std::uint32_t element_oid) : element_oid_(element_oid) {}
    void add(std::int64_t v) {
        put32(data_, 8);
        const std::uint64_t big = htobe64(static_cast<std::uint64_t>(v));
        data_.append(reinterpret_cast<const char*>(&big), sizeof big);
        ++count_;
    }
    void add(std::string_view bytes) {
        put32(data_, static_cast<std::uint32_t>(bytes.size()));
        data_.append(bytes);
        ++count_;
    }
    void add_null() {
        put32(data_, std::numeric_limits<std::uint32_t>::max());  // -1: NULL
        has_null_ = true;
        ++count_;
    }
    template <class T>
    void add(const std::optional<T>& v) {
        v ? add(*v) : add_null();
    }
    Param take() {
        // Dimensions, flags (has nulls), element type, then per dimension
        // its length and lower bound.
        std::string out;
        out.reserve(20 + data_.size());
        put32(out, 1);
        put32(out, has_null_ ? 1 : 0);
        put32(out, element_oid_);
        put32(out, count_);
        put32(out, 1);
        out += data_;
        return Param::bytes(std::move(out));
    }

private:
    static void put32(std::string& out, std::uint32_t v) {
        v = htobe32(v);
        out.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    std::uint32_t element_oid_;
    std::string data_;
    std::uint32_t count_ = 0;
    bool has_null_ = false;
};

std::optional<std::int64_t> stored(const std::optional<WallTime>& time) {
    if (!time) return std::nullopt;
    return to_stored(*time);
}

std::optional<std::string_view> view(const std::string* s) {
    if (!s) return std::nullopt;
    return std::string_view(*s);
}

}  // namespace

ChangeStatements::ChangeStatements(const Names& names, std::vector<Query>& out, std::string shard)
    : names_(names), out_(out), shard_(std::move(shard)) {}

ChangeStatements::Pending& ChangeStatements::pending_for(std::uint64_t id, std::size_t bytes) {
    if (!rows_.empty() && bytes_ + bytes > run_bytes) close_run();
    bytes_ += bytes;
    const auto [at, added] = by_task_.try_emplace(id, rows_.size());
    if (added) rows_.push_back(Pending{});
    return rows_[at->second];
}

void ChangeStatements::add(const Change& change) {
    if (const auto* inserted = std::get_if<TaskInserted>(&change)) {
        const TaskRow& r = inserted->row;
        // A task is inserted before anything else of it: one already in the
        // run (an id written twice, which the server refuses) starts a new one.
        if (by_task_.count(r.id.value)) close_run();
        Pending& p = pending_for(r.id.value, r.payload.size() + r.options.size() + (r.output ? r.output->size() : 0));
        p.inserted = &r;
        p.output = r.output ? &*r.output : nullptr;
        return;
    }
    if (const auto* t = std::get_if<TaskTransition>(&change)) {
        Pending& p = pending_for(t->id.value, t->last_error.size() + (t->output ? t->output->size() : 0));
        p.last = t;
        if (t->output) p.output = &*t->output;
        return;
    }
    close_run();
    std::visit(
        [&](const auto& c) {
            using C = std::decay_t<decltype(c)>;
            const Names& n = names_;
            if constexpr (std::is_same_v<C, TaskKeyReleased>) {
                out_.push_back(Query{"UPDATE " + n.tasks + " SET key = NULL WHERE id = $1", {Param(to_int64(c.id.value))}});
            } else if constexpr (std::is_same_v<C, RecurringPut>) {
                out_.push_back(Query{"INSERT INTO " + n.recurring +
                                         " (name, definition, shard) VALUES ($1, $2, $3) "
                                         "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, "
                                         "shard = excluded.shard",
                                     {Param(c.name), Param(c.definition), Param(shard_)}});
            } else if constexpr (std::is_same_v<C, RecurringRemoved>) {
                out_.push_back(Query{"DELETE FROM " + n.recurring + " WHERE name = $1", {Param(c.name)}});
            } else if constexpr (std::is_same_v<C, RecurringFired>) {
                out_.push_back(Query{"UPDATE " + n.recurring + " SET last_fired = $2 WHERE name = $1",
                                     {Param(c.name), Param(to_stored(c.fired_at))}});
            } else if constexpr (std::is_same_v<C, FairWeightSet>) {
                out_.push_back(Query{"INSERT INTO " + n.meta +
                                         " (name, value) VALUES ($1, $2) "
                                         "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                                     {Param(fair_weight_name(c.pool, c.key)), Param(fair_weight_value(c.weight))}});
            } else if constexpr (std::is_same_v<C, HighWaterMarks>) {
                out_.push_back(Query{"INSERT INTO " + n.meta +
                                         " AS m (name, value) VALUES ($3, $1::bigint), ($4, $2::bigint) "
                                         "ON CONFLICT (name) DO UPDATE SET value = greatest(m.value, excluded.value)",
                                     {Param(to_int64(c.next_task_id)), Param(to_int64(c.next_lease_id)),
                                      Param(mark_name("next_task_id", shard_)),
                                      Param(mark_name("next_lease_id", shard_))}});
            } else if constexpr (std::is_same_v<C, ConfigWritten>) {
                const ShardConfig& config = c.config;
                out_.push_back(Query{"INSERT INTO " + n.shard_config +
                                         " (shard, body, retention, written_at) VALUES ($1, $2, $3, $4) "
                                         "ON CONFLICT (shard) DO UPDATE SET body = excluded.body, "
                                         "retention = excluded.retention, written_at = excluded.written_at",
                                     {Param(config.shard), Param(config.body),
                                      Param(static_cast<std::int64_t>(config.retention.count())),
                                      Param(to_stored(config.written_at))}});
            } else if constexpr (std::is_same_v<C, InboxTaken>) {
                // An entry already gone (taken by a commit that was retried)
                // deletes nothing: each is taken once.
                std::string seqs = "{";
                for (const std::uint64_t seq : c.seqs) {
                    if (seqs.size() > 1) seqs += ',';
                    seqs += std::to_string(to_int64(seq));
                }
                seqs += '}';
                out_.push_back(Query{"DELETE FROM " + n.inbox + " WHERE seq = ANY($1::bigint[])", {Param(seqs)}});
            } else if constexpr (std::is_same_v<C, PoolPaused>) {
                if (c.paused)
                    out_.push_back(Query{"INSERT INTO " + n.meta +
                                             " (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                                         {Param(paused_row_name(c.pool)), Param(to_stored(c.at))}});
                else
                    out_.push_back(Query{"DELETE FROM " + n.meta + " WHERE name = $1", {Param(paused_row_name(c.pool))}});
            }
            // TaskInserted and TaskTransition joined the run above.
        },
        change);
}

void ChangeStatements::close_run() {
    // id, key, pool, kind, status, attempt, last_error, submitted_at,
    // updated_at, run_at, options, payload, output, fair_key
    std::vector<Column> in{Column(int8_oid), Column(text_oid), Column(text_oid),  Column(text_oid), Column(text_oid),
                           Column(int8_oid), Column(text_oid), Column(int8_oid),  Column(int8_oid), Column(int8_oid),
                           Column(text_oid), Column(bytea_oid), Column(bytea_oid), Column(text_oid)};
    // id, status, attempt, last_error, updated_at, run_at, output
    std::vector<Column> up{Column(int8_oid), Column(text_oid),  Column(int8_oid), Column(text_oid),
                           Column(int8_oid), Column(int8_oid), Column(bytea_oid)};
    std::size_t inserts = 0;
    std::size_t updates = 0;
    for (const Pending& p : rows_) {
        if (p.inserted) {
            const TaskRow& r = *p.inserted;
            const TaskTransition* t = p.last;
            in[0].add(to_int64(r.id.value));
            in[1].add(r.key);
            in[2].add(r.pool);
            in[3].add(r.kind);
            in[4].add(to_string(t ? t->status : r.status));
            in[5].add(std::int64_t{t ? t->attempt : r.attempt});
            in[6].add(t ? t->last_error : r.last_error);
            in[7].add(to_stored(r.submitted_at));
            in[8].add(to_stored(t ? t->updated_at : r.updated_at));
            in[9].add(stored(t ? t->run_at : r.run_at));
            in[10].add(r.options);
            in[11].add(r.payload);
            in[12].add(view(p.output));
            in[13].add(r.fair_key);
            ++inserts;
        } else {
            const TaskTransition& t = *p.last;
            up[0].add(to_int64(t.id.value));
            up[1].add(to_string(t.status));
            up[2].add(std::int64_t{t.attempt});
            up[3].add(t.last_error);
            up[4].add(to_stored(t.updated_at));
            up[5].add(stored(t.run_at));
            up[6].add(view(p.output));
            ++updates;
        }
    }
    const auto params = [](std::vector<Column>& columns) {
        std::vector<Param> out;
        out.reserve(columns.size());
        for (Column& c : columns) out.push_back(c.take());
        return out;
    };
    if (inserts > 0) {
        std::string sql = "INSERT INTO " + names_.tasks;
        sql += " (id, key, pool, kind, status, attempt, last_error, submitted_at, updated_at, run_at, options, "
               "payload, output, fair_key) SELECT unnest($1::int8[]), unnest($2::text[]), unnest($3::text[]), "
               "unnest($4::text[]), unnest($5::text[]), unnest($6::int8[]), unnest($7::text[]), unnest($8::int8[]), "
               "unnest($9::int8[]), unnest($10::int8[]), unnest($11::text[]), unnest($12::bytea[]), "
               "unnest($13::bytea[]), unnest($14::text[])";
        out_.push_back(Query{std::move(sql), params(in)});
    }
    if (updates > 0) {
        if (!joins_by_index_) {
            // The planner knows the arrays' lengths, and for a long run it
            // hashes the whole table (a scan of every row, retained ones
            // too) rather than look each task up by its key. For this
            // transaction only: a run costs what it holds, not the table.
            out_.push_back(Query{"SELECT set_config('enable_hashjoin', 'off', true), "
                                 "set_config('enable_mergejoin', 'off', true)",
                                 {}});
            joins_by_index_ = true;
        }
        std::string sql = "UPDATE " + names_.tasks;
        sql += " AS t SET status = v.status, attempt = v.attempt, last_error = v.last_error, "
               "updated_at = v.updated_at, run_at = v.run_at, output = coalesce(v.output, t.output) "
               "FROM (SELECT unnest($1::int8[]) AS id, unnest($2::text[]) AS status, unnest($3::int8[]) AS attempt, "
               "unnest($4::text[]) AS last_error, unnest($5::int8[]) AS updated_at, unnest($6::int8[]) AS run_at, "
               "unnest($7::bytea[]) AS output) AS v WHERE t.id = v.id";
        out_.push_back(Query{std::move(sql), params(up)});
    }
    rows_.clear();
    by_task_.clear();
    bytes_ = 0;
}

void ChangeStatements::finish() { close_run(); }

}  // namespace cronoq::store::postgres
