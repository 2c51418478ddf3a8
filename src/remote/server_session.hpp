#pragma once
// One worker's stream on the server: the gRPC reactor that reads it and the
// session the scheduler writes to (detail::RemoteSession).
#include "wire.hpp"

#include "cronoq/v1/workers.grpc.pb.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace cronoq::detail {

class StreamSession;

/// What every stream of one server shares; the server and each reactor
/// hold it.
struct ServerShared {
    std::shared_ptr<RemoteHost> host;
    std::vector<std::string> tokens;
    bool accept_client_certificates = false;
    std::size_t max_message_bytes = 0;

    std::mutex mu;
    std::condition_variable streams_ended;
    std::set<std::shared_ptr<StreamSession>> sessions;  // streams not yet done
    bool stopping = false;
};

/// The messages the scheduler sends one worker, written in order, one
/// write in flight at a time (gRPC's rule), from whichever thread queued
/// or completed the last write. Nothing is written before `registered`
/// (leases queued while `RemoteHost::connect` runs wait for it).
///
/// A write with more messages queued behind it carries gRPC's buffer hint:
/// it completes at once and gRPC holds its bytes until the last queued
/// message, written without the hint, sends them all in one go (docs/remote.md,
/// "Writes"). A lone message goes out at once. Written leases are kept for
/// the next ones, so a lease costs no allocation once the stream is warm.
class StreamSession : public RemoteSession, public std::enable_shared_from_this<StreamSession> {
public:
    using Reactor = grpc::ServerBidiReactor<v1::WorkerMessage, v1::ServerMessage>;
    StreamSession(Reactor* reactor, std::size_t max_message_bytes)
        : reactor_(reactor), max_message_bytes_(max_message_bytes) {}

    /// Throws std::length_error for a lease larger than `max_message_bytes`:
    /// gRPC would fail its write and end the stream with every lease on it.
    void lease(RemoteLeaseOut lease) override;
    void abort(LeaseId lease, std::string reason) override;
    void shutdown(std::string reason, bool not_leader) override;

    /// Writes `first` and then what was queued behind it.
    void start(v1::ServerMessage first);
    void send(v1::ServerMessage message);
    /// Ends the stream with `status`: after the queued messages (and after
    /// `start`), or at once when `drop_queued` (a refusal, a stream whose
    /// worker is gone). A later call only upgrades a queued finish to an
    /// immediate one. A long message is cut (docs/remote.md, Refusals).
    void finish(grpc::Status status, bool drop_queued);
    void write_done(bool ok);
    /// The reactor is done: nothing is written any more.
    void detach();

private:
    /// Starts the next write or the finish; call with the lock held, and
    /// `run` the result after releasing it.
    struct Next {
        const v1::ServerMessage* write = nullptr;
        bool more = false;  // others queued behind it: the buffer hint
        std::optional<grpc::Status> finish;
    };
    Next next_locked();
    void run(Next next);

    std::mutex mu_;
    Reactor* reactor_;  // null once detached
    const std::size_t max_message_bytes_;
    std::deque<v1::ServerMessage> queue_;  // the front is in flight while writing_
    std::vector<std::unique_ptr<v1::Lease>> spare_leases_;  // written ones, for reuse
    bool started_ = false;
    bool writing_ = false;
    bool wrote_first_ = false;  // the first write carries the headers: never held back
    std::optional<grpc::Status> finish_wanted_;
    bool finish_at_once_ = false;  // a refusal: not after the queue, nor waiting for start()
    bool finished_ = false;
};

/// Reads one worker's stream: checks its credentials, its register
/// message and protocol version, then turns what it sends into reports.
class WorkReactor final : public StreamSession::Reactor {
public:
    WorkReactor(std::shared_ptr<ServerShared> shared, grpc::CallbackServerContext* context);

    void OnReadDone(bool ok) override;
    void OnWriteDone(bool ok) override;
    void OnDone() override;

private:
    bool authorized() const;
    void on_register();
    void on_stream_end();

    std::shared_ptr<ServerShared> shared_;
    grpc::CallbackServerContext* context_;
    std::shared_ptr<StreamSession> session_;
    v1::WorkerMessage in_;
    WorkerId worker_;  // set once registered
    bool disconnected_ = false;
};

}  // namespace cronoq::detail
