#include "net_changes.hpp"

namespace cronoq::store {

namespace {

/// A task whose end may come soon, so its insert is worth holding open.
bool open(TaskStatus status) { return status == TaskStatus::Ready || status == TaskStatus::Running; }

/// What a transition leaves in a row: the stored output is kept when it
/// carries none (as the backends' UPDATE does).
void apply(TaskRow& row, const TaskTransition& t) {
    row.status = t.status;
    row.attempt = t.attempt;
    row.last_error = t.last_error;
    row.updated_at = t.updated_at;
    row.run_at = t.run_at;
    if (t.output) row.output = t.output;
}

}  // namespace

void NetChanges::start() {
    row_at_.clear();
    open_inserts_ = 0;
}

std::size_t NetChanges::add(Batch& batch) {
    auto& changes = batch.changes;
    // Compacted as it goes: what stays moves down to `kept`, whose address
    // then no longer changes (the vector only shrinks).
    std::size_t kept = 0;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        Change& change = changes[i];
        bool folded = false;
        if (const auto* t = std::get_if<TaskTransition>(&change)) {
            folded = fold_transition(*t, &changes[kept]);
        } else if (const auto* released = std::get_if<TaskKeyReleased>(&change)) {
            // Into the insert of this transaction: its row never holds the
            // key, which only frees the key sooner.
            const auto it = row_at_.find(released->id.value);
            if (it != row_at_.end())
                if (auto* inserted = std::get_if<TaskInserted>(it->second)) {
                    inserted->row.key.reset();
                    folded = true;
                }
        } else if (const auto* inserted = std::get_if<TaskInserted>(&change)) {
            row_at_[inserted->row.id.value] = &changes[kept];
            if (open(inserted->row.status)) ++open_inserts_;
        }
        if (folded) continue;
        if (kept != i) changes[kept] = std::move(change);
        ++kept;
    }
    changes.resize(kept);
    return kept;
}

bool NetChanges::fold_transition(const TaskTransition& t, Change* at) {
    const auto [it, first] = row_at_.try_emplace(t.id.value, at);
    if (first) return false;
    // A later transition of a row this transaction already writes: only
    // that row's columns change, so it moves to the earlier change.
    if (auto* inserted = std::get_if<TaskInserted>(it->second)) {
        const bool was_open = open(inserted->row.status);
        apply(inserted->row, t);
        const bool is_open = open(inserted->row.status);
        if (was_open && !is_open) --open_inserts_;
        if (!was_open && is_open) ++open_inserts_;
    } else {
        auto& prior = std::get<TaskTransition>(*it->second);
        std::optional<std::string> kept = std::move(prior.output);
        prior = t;
        if (!prior.output) prior.output = std::move(kept);
    }
    return true;
}

}  // namespace cronoq::store
