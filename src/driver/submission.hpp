#pragma once
// A task on its way into the engine, as every way in hands it to the one
// admission entry (docs/design.md, "One submission path"): `try_submit`,
// `submit`, `try_submit_many`, `try_submit_batch`, `retry`, a recurring
// occurrence and recovery each make `Submission`s, have the `Encoder` make
// their bytes before the engine's mutex, and call `admit(group, mode)`.
#include <cronoq/detail/handle_state.hpp>
#include <cronoq/detail/task_request.hpp>
#include <cronoq/ids.hpp>
#include <cronoq/store/journal.hpp>
#include <cronoq/submit_error.hpp>

#include "encoder.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace cronoq::detail {

struct Submission {
    explicit Submission(TaskRequest& r) noexcept : request(r) {}

    /// The caller's, not moved into the submission (a request is 432
    /// bytes of strings and options: a round trip would pay for the move).
    /// Consumed only when admitted, so that a waiting submitter can try
    /// again with it.
    TaskRequest& request;
    /// Made before the mutex when the encoder says it is needed.
    std::optional<Encoded> encoded;
    /// Why it is refused before the engine sees it (the encoder's word).
    std::optional<std::pair<SubmitError, std::string>> refused;
    /// AdmitMode::Replacing: the ended task it replaces; AdmitMode::Ingesting:
    /// the ended task a client's retry replaces (its key moves along), or 0.
    TaskId replaces{};
    /// AdmitMode::Restoring: the stored row it comes back from;
    /// AdmitMode::Ingesting: the row a client committed (its id is the task's).
    const store::TaskRow* row = nullptr;
    /// Why the new task ends Skipped as soon as it is admitted: a key it
    /// awaits is held by a task of another shard (shard_keys.hpp).
    std::optional<std::string> skip;

    /// Has `encoder` make the bytes, if they are needed; `refused` on failure.
    void encode_with(const Encoder& encoder) {
        if (!encoder.needed(request)) return;
        auto bytes = encoder.encode(request);
        if (bytes)
            encoded.emplace(std::move(bytes).value());
        else
            refused.emplace(bytes.error(), bytes.message());
    }
};

using Admitted = SubmitResult<std::shared_ptr<HandleState>>;

/// How `admit` treats a group.
enum class AdmitMode : std::uint8_t {
    Each,       ///< each admitted or refused on its own
    All,        ///< every one or none (the first refusal is every one's)
    Replacing,  ///< each in place of its ended task `replaces` (retry): its key moves along
    Restoring,  ///< each back from its stored row, with its id and status (recovery)
    /// A client's row (one task), or a client's batch whole (as `All`),
    /// with the row's id; the row is in the store already, so only the
    /// engine's transitions are written (docs/store.md, "Clients").
    Ingesting,
};

/// A group of submissions handed to `admit`, read in order: `at(i)` may
/// reuse one submission for every `i` (valid until the next call); each
/// result goes to `result(i, ...)`, in order.
class Submissions {
public:
    virtual std::size_t size() const = 0;
    virtual Submission& at(std::size_t i) = 0;
    virtual void result(std::size_t i, Admitted&& r) = 0;

protected:
    Submissions() = default;
    Submissions(const Submissions&) = default;
    Submissions& operator=(const Submissions&) = default;
    ~Submissions() = default;
};

/// One submission, its result kept.
class OneSubmission final : public Submissions {
public:
    explicit OneSubmission(Submission& s) : s_(s) {}
    std::size_t size() const override { return 1; }
    Submission& at(std::size_t) override { return s_; }
    void result(std::size_t, Admitted&& r) override { result_.emplace(std::move(r)); }
    Admitted take() && { return std::move(*result_); }

private:
    Submission& s_;
    std::optional<Admitted> result_;
};

}  // namespace cronoq::detail
