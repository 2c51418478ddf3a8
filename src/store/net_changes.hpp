#pragma once
// The net effect of a commit's batches (docs/store.md, "Net changes"): a
// task inserted and moved on within one transaction is written as one row
// in its final state, a task moved on several times as one transition.
#include <cronoq/store/journal.hpp>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace cronoq::store {

/// Folds batches into their net effect, in place: a change that folds into
/// an earlier one (of the same or an earlier batch) is applied to it and
/// leaves its batch. Written one after the other in one transaction, the
/// folded batches leave the store as the batches as queued would; folding
/// them again changes nothing. Reuses its index from one commit to the next.
class NetChanges {
public:
    /// Starts a transaction's fold; then `add` each of its batches in order
    /// (a batch added folds into the earlier ones): returns the changes
    /// left in `batch`.
    void start();
    std::size_t add(Batch& batch);

    /// Rows inserted by the batches added since `start()` that are still
    /// Ready or Running: tasks whose end may soon fold into their insert.
    std::size_t open_inserts() const { return open_inserts_; }

private:
    /// False when `t` is kept as a change of its own (then `at` is where it goes).
    bool fold_transition(const TaskTransition& t, Change* at);

    /// A task's row change (its insert or its transition), where it stays.
    std::unordered_map<std::uint64_t, Change*> row_at_;
    std::size_t open_inserts_ = 0;
};

}  // namespace cronoq::store
