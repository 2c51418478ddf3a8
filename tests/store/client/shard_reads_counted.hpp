#pragma once
// A store that counts how often the shard map is read through it
// (`Journal::read_shards`) and is otherwise the real store it wraps: for
// tests of how often a leader reads the map (docs/store.md, "Keys across
// shards").
#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace cronoq::test {

class ShardReadsCounted final : public Store, public store::Journal {
public:
    explicit ShardReadsCounted(std::shared_ptr<Store> inner) : inner_(std::move(inner)), journal_(inner_->journal()) {}

    /// The reads of the shard map so far.
    std::size_t shard_reads() const { return shard_reads_.load(); }

    std::optional<StoredTask> get_task(TaskRef task) const override { return inner_->get_task(std::move(task)); }
    std::vector<StoredTask> list(TaskStatus status, std::size_t limit) const override { return inner_->list(status, limit); }
    TaskPage query(const TaskQuery& query) const override { return inner_->query(query); }
    std::size_t prune(std::chrono::nanoseconds older_than) override { return inner_->prune(older_than); }
    store::Journal& journal() override { return *this; }
    store::ClientAccess& client_access() override { return inner_->client_access(); }

    void lead(store::LeadHandlers handlers) override { journal_.lead(std::move(handlers)); }
    store::Sequence enqueue(store::Batch batch) override { return journal_.enqueue(std::move(batch)); }
    void release() override { journal_.release(); }
    store::Figures figures() const override { return journal_.figures(); }
    std::optional<store::TaskRow> read_task(const TaskRef& task) const override { return journal_.read_task(task); }
    store::LeaseView read_lease() const override { return journal_.read_lease(); }
    store::ShardMap read_shards() const override {
        ++shard_reads_;
        return journal_.read_shards();
    }
    std::vector<store::InboxEntry> read_inbox(std::size_t limit) const override { return journal_.read_inbox(limit); }
    std::size_t max_value_bytes() const override { return journal_.max_value_bytes(); }

private:
    std::shared_ptr<Store> inner_;
    store::Journal& journal_;
    mutable std::atomic<std::size_t> shard_reads_{0};
};

}  // namespace cronoq::test
