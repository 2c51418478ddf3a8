// The non-template core of cronoq::Client (<cronoq/detail/client_core.hpp>;
// docs/guide/replicas.md).
#include <cronoq/detail/client_core.hpp>
#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/store/store.hpp>
#include <cronoq/task_failure.hpp>

#include "../driver/client_batch.hpp"
#include "../driver/task_options.hpp"
#include "client_rows.hpp"
#include "end_watcher.hpp"
#include "known_config.hpp"

#include <deque>
#include <set>
#include <stdexcept>
#include <thread>

namespace cronoq::detail {

namespace {

bool client_retryable_end(TaskStatus s) {
    return s == TaskStatus::Failed || s == TaskStatus::DeadLettered || s == TaskStatus::Cancelled;
}

class ClientCoreImpl final : public ClientCore {
public:
    ClientCoreImpl(std::shared_ptr<Store> store, ErasedCodec codec)
        : store_(std::move(store)), access_(store_->client_access()),
          decode_output_(codec.decode_output),
          rows_(std::move(codec), store_->journal().max_value_bytes()), watcher_(*store_, access_),
          io_([this] { run_jobs(); }) {}

    ~ClientCoreImpl() override {
        {
            std::lock_guard lock(jobs_mu_);
            stopping_ = true;
        }
        jobs_cv_.notify_all();
        if (io_.get_id() == std::this_thread::get_id())
            io_.detach();  // never join itself (no job holds the core: see ClientCore::run)
        else
            io_.join();
    }

    void refresh_configs() override {
        KnownConfig known = KnownConfig::of(access_.configs());
        std::lock_guard lock(config_mu_);
        known_ = std::move(known);
        read_at_ = std::chrono::steady_clock::now();
    }

    std::vector<SubmitResult<TaskId>> submit(std::vector<TaskRequest> requests, ClientSubmitMode mode) override {
        const bool batch = mode == ClientSubmitMode::Batch;
        std::vector<std::optional<SubmitResult<TaskId>>> results(requests.size());
        std::vector<store::TaskRow> rows;
        std::vector<std::size_t> row_of;  // rows[k] is requests[row_of[k]]
        rows.reserve(requests.size());
        row_of.reserve(requests.size());
        std::optional<std::pair<SubmitError, std::string>> first_refusal;
        std::set<std::string_view> batch_keys;
        KnownConfig known = config();
        bool refreshed = false;
        for (std::size_t i = 0; i < requests.size() && !(batch && first_refusal); ++i) {
            const TaskRequest& r = requests[i];
            auto refusal = ClientRows::check(r, known);
            // A leader may have started since the configuration was read.
            if (refusal && !refreshed &&
                (refusal->first == SubmitError::UnknownPool || refusal->first == SubmitError::UnknownResource)) {
                refresh_configs();
                known = config();
                refreshed = true;
                refusal = ClientRows::check(r, known);
            }
            if (!refusal && batch && r.key && !batch_keys.insert(*r.key).second)
                refusal = std::pair{SubmitError::DuplicateKeyInBatch, "the key \"" + *r.key + "\" is given twice"};
            if (!refusal) refusal = shard_refusal(requests, i, known, batch);
            if (!refusal) {
                auto row = rows_.row(r);
                if (row) {
                    rows.push_back(std::move(row).value());
                    row_of.push_back(i);
                    continue;
                }
                refusal = std::pair{row.error(), row.message()};
            }
            if (batch) {
                first_refusal = std::pair{refusal->first, "task " + std::to_string(i) + " of the batch: " + refusal->second};
            } else {
                results[i].emplace(refusal->first, std::move(refusal->second));
            }
        }
        if (first_refusal) {
            std::vector<SubmitResult<TaskId>> refused;
            refused.reserve(requests.size());
            for (std::size_t i = 0; i < requests.size(); ++i) refused.emplace_back(first_refusal->first, first_refusal->second);
            return refused;
        }
        if (batch && !rows.empty()) {
            // The leader ingests the rows that carry this mark whole
            // (src/driver/client_batch.hpp); they are committed together.
            const ClientBatchMark mark{new_client_batch_id(), static_cast<std::uint32_t>(rows.size()), 0};
            for (std::size_t k = 0; k < rows.size(); ++k) {
                ClientBatchMark m = mark;
                m.index = static_cast<std::uint32_t>(k);
                rows[k].options = mark_client_batch(rows[k].options, m);
            }
        }
        if (!rows.empty()) {
            const auto submitted = access_.submit(std::move(rows));
            for (std::size_t k = 0; k < submitted.size() && k < row_of.size(); ++k) results[row_of[k]].emplace(submitted[k].id);
        }
        std::vector<SubmitResult<TaskId>> out;
        out.reserve(results.size());
        for (auto& r : results) out.push_back(std::move(*r));
        return out;
    }

    bool cancel(const TaskRef& task) override { return access_.cancel(task); }

    /// Dependencies and batches stay within one shard (docs/guide/replicas.md,
    /// "Shards"): a dependency on a task of another shard's pool, or a batch
    /// over two shards' pools, is Invalid naming both. A pool or a
    /// dependency the client cannot place is left to the leader.
    std::optional<std::pair<SubmitError, std::string>> shard_refusal(const std::vector<TaskRequest>& requests,
                                                                     std::size_t i, const KnownConfig& known,
                                                                     bool batch) const {
        const auto shard_of_pool = [&](const std::string& pool) -> std::optional<std::string> {
            const auto it = known.pools.find(pool);
            if (it == known.pools.end()) return std::nullopt;
            return it->second.shard;
        };
        const TaskRequest& r = requests[i];
        if (!r.pool) return std::nullopt;
        const auto own = shard_of_pool(*r.pool);
        if (!own) return std::nullopt;
        const auto refuse = [&](const std::string& what, const std::string& other) {
            return std::pair{SubmitError::Invalid, what + " of shard \"" + other + "\", but this task's pool \"" +
                                                       *r.pool + "\" is of shard \"" + *own +
                                                       "\": dependencies and batches stay within one shard"};
        };
        if (batch && i > 0 && requests[0].pool)
            if (const auto first = shard_of_pool(*requests[0].pool); first && *first != *own)
                return refuse("the batch's first task is", *first);
        for (const Dep& dep : r.depends_on) {
            std::optional<std::string> pool;
            // A task of the same call first, then the store.
            if (dep.ref.key)
                for (const TaskRequest& other : requests)
                    if (other.key == dep.ref.key && other.pool) pool = other.pool;
            if (!pool) {
                std::optional<StoredTask> held;
                try {
                    held = store_->get_task(dep.ref);
                } catch (const StoreError&) {
                }
                if (held) pool = held->pool;
            }
            if (!pool) continue;
            if (const auto shard = shard_of_pool(*pool); shard && *shard != *own)
                return refuse("it depends on a task of pool \"" + *pool + "\"", *shard);
        }
        return std::nullopt;
    }

    std::optional<StoredTask> get(const TaskRef& task) override { return store_->get_task(task); }

    std::optional<TaskId> find(const TaskRef& task) override {
        auto row = store_->get_task(task);
        if (!row) return std::nullopt;
        return row->id;
    }

    // A retry is a new submission from the old row's payload and options
    // (docs/guide/replicas.md, "Retry from a client"), committed as any
    // client submission: the leader ingests it like the others. A key moves
    // to it in the client's transaction, and the row's mark has the leader
    // move it in its engine too, as Scheduler::retry does.
    std::optional<TaskId> retry(const TaskRef& task) override {
        auto old = store_->journal().read_task(task);
        if (!old || !client_retryable_end(old->status)) return std::nullopt;
        TaskRequest r;
        try {
            r = decode_options(old->options);
        } catch (const std::exception& e) {
            throw SubmitException(SubmitError::Invalid, std::string("the task's stored options cannot be read: ") + e.what());
        }
        relative_to_submission(r, old->submitted_at);
        r.depends_on.clear();
        r.pool = old->pool;
        r.kind = old->kind;
        r.key = old->key;
        if (auto refusal = ClientRows::check(r, config()))
            throw SubmitException(refusal->first, std::move(refusal->second));
        store::TaskRow row = rows_.row(std::move(old->payload), r);
        if (!r.key) {
            std::vector<store::TaskRow> rows;
            rows.push_back(std::move(row));
            return access_.submit(std::move(rows)).at(0).id;
        }
        row.options = mark_client_retry(row.options, old->id);
        // A task other than the old one holding the key (the leader's retry
        // of it, committed first) gives that task.
        return access_.retry(old->id, std::move(row)).id;
    }

    TaskPage query(const TaskQuery& query) override { return store_->query(query); }

    // The pool is checked as a task's is (ClientRows::check), so that an
    // unknown pool is the same error as at submit.
    void set_paused(const std::string& pool, bool paused) override {
        if (pool.empty())
            throw SubmitException(SubmitError::Invalid, std::string(paused ? "pause" : "resume") + ": no pool named");
        TaskRequest r;
        r.pool = pool;
        auto refusal = ClientRows::check(r, config());
        if (refusal && refusal->first == SubmitError::UnknownPool) {  // a leader may have started since
            refresh_configs();
            refusal = ClientRows::check(r, config());
        }
        if (refusal) throw SubmitException(refusal->first, std::move(refusal->second));
        access_.set_paused(pool, paused);
    }

    TaskStatus status(TaskId id) override {
        auto row = store_->get_task(TaskRef(id));
        if (!row) throw std::out_of_range("task " + std::to_string(id.value) + ": the store holds no row of it (pruned)");
        return row->status;
    }

    std::shared_ptr<EndWait> await_end(TaskId id) override { return watcher_.await(id); }
    void forget(const std::shared_ptr<EndWait>& wait) override { watcher_.forget(wait); }

    std::shared_ptr<const void> outcome(const EndWait& wait) const override {
        const ClientEnd& end = wait.end();
        if (end.status != TaskStatus::Succeeded) throw TaskFailure(end.status, end.attempt, end.message);
        if (!end.output || !decode_output_) return nullptr;
        return decode_output_(*end.output);
    }

    void enqueue(UniqueFunction<void()> job) override {
        {
            std::lock_guard lock(jobs_mu_);
            jobs_.push_back(std::move(job));
        }
        jobs_cv_.notify_one();
    }

private:
    KnownConfig config() {
        {
            std::lock_guard lock(config_mu_);
            if (std::chrono::steady_clock::now() - read_at_ < config_refresh) return known_;
        }
        refresh_configs();
        std::lock_guard lock(config_mu_);
        return known_;
    }

    // Every job queued runs, also those queued before the core is
    // destroyed: a submission started is finished.
    void run_jobs() {
        std::unique_lock lock(jobs_mu_);
        while (true) {
            jobs_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            UniqueFunction<void()> job = std::move(jobs_.front());
            jobs_.pop_front();
            lock.unlock();
            job();
            job = {};
            lock.lock();
        }
    }

    // How long a configuration read serves submissions before it is read
    // again (a refusal reads it again at once).
    static constexpr std::chrono::seconds config_refresh{1};

    std::shared_ptr<Store> store_;
    store::ClientAccess& access_;
    std::function<std::shared_ptr<const void>(std::string_view)> decode_output_;
    ClientRows rows_;
    std::mutex config_mu_;
    KnownConfig known_;
    std::chrono::steady_clock::time_point read_at_{};
    EndWatcher watcher_;
    std::mutex jobs_mu_;
    std::condition_variable jobs_cv_;
    std::deque<UniqueFunction<void()>> jobs_;
    bool stopping_ = false;
    std::thread io_;
};

}  // namespace

std::shared_ptr<ClientCore> ClientCore::make(std::shared_ptr<Store> store, ErasedCodec codec) {
    if (!store) throw std::invalid_argument("cronoq::Client: no store");
    return std::make_shared<ClientCoreImpl>(std::move(store), std::move(codec));
}

}  // namespace cronoq::detail
