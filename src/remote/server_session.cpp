#include "server_session.hpp"

#include <stdexcept>
#include <utility>

namespace cronoq::detail {

namespace {

/// A status message travels in a trailer, and a client refuses trailers
/// past its metadata limit (8 KiB by default) as RESOURCE_EXHAUSTED, which
/// hides the refusal: what a refusal echoes of a worker's input (its pool's
/// name) is cut to this.
constexpr std::size_t max_status_message = 1024;

/// Written leases kept for reuse, per stream: as many as a busy worker has
/// in flight at once, about.
constexpr std::size_t max_spare_leases = 256;

grpc::Status bounded(grpc::Status status) {
    const std::string& message = status.error_message();
    if (message.size() <= max_status_message) return status;
    std::size_t cut = max_status_message;
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    return grpc::Status(status.error_code(),
                        message.substr(0, cut) + "... (cut: " + std::to_string(message.size()) + " bytes in all)",
                        status.error_details());
}

}  // namespace

// ---- StreamSession ------------------------------------------------------------------

void StreamSession::lease(RemoteLeaseOut lease) {
    std::unique_ptr<v1::Lease> reused;
    {
        std::lock_guard lock(mu_);
        if (!spare_leases_.empty()) {
            reused = std::move(spare_leases_.back());
            spare_leases_.pop_back();
        }
    }
    if (!reused) reused = std::make_unique<v1::Lease>();
    wire::fill_lease(lease, *reused);
    v1::ServerMessage message;
    message.set_allocated_lease(reused.release());
    if (const std::size_t size = message.ByteSizeLong(); size > max_message_bytes_)
        throw std::length_error("lease: " + std::to_string(size) +
                                " bytes encoded, more than the worker server sends (max_message_bytes " +
                                std::to_string(max_message_bytes_) + ")");
    send(std::move(message));
}

void StreamSession::abort(LeaseId lease, std::string reason) { send(wire::abort(lease, reason)); }

void StreamSession::shutdown(std::string reason, bool not_leader) {
    send(wire::shutdown(reason, not_leader));
    finish(grpc::Status::OK, false);
}

void StreamSession::start(v1::ServerMessage first) {
    Next next;
    {
        std::lock_guard lock(mu_);
        if (!reactor_ || (finish_wanted_ && finish_at_once_)) return;
        queue_.push_front(std::move(first));
        started_ = true;
        next = next_locked();
    }
    run(next);
}

void StreamSession::send(v1::ServerMessage message) {
    Next next;
    {
        std::lock_guard lock(mu_);
        if (!reactor_ || finish_wanted_) return;  // the stream is ending: the host learns it from disconnect
        queue_.push_back(std::move(message));
        next = next_locked();
    }
    run(next);
}

void StreamSession::finish(grpc::Status status, bool drop_queued) {
    Next next;
    {
        std::lock_guard lock(mu_);
        if (!reactor_ || finished_) return;
        // Already finishing, at least as urgently: the first status stands.
        if (finish_wanted_ && (finish_at_once_ || !drop_queued)) return;
        finish_wanted_ = bounded(std::move(status));
        finish_at_once_ = drop_queued;
        if (drop_queued) {
            // The front may be in flight: it must stay until its write completes.
            while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
        }
        next = next_locked();
    }
    run(next);
}

void StreamSession::write_done(bool ok) {
    Next next;
    {
        std::lock_guard lock(mu_);
        if (queue_.front().has_lease() && spare_leases_.size() < max_spare_leases)
            spare_leases_.emplace_back(queue_.front().release_lease());
        queue_.pop_front();
        writing_ = false;
        if (!ok) {
            // The stream is broken: its read fails too and ends it.
            queue_.clear();
            if (!finish_wanted_) finish_wanted_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
            finish_at_once_ = true;
        }
        next = next_locked();
    }
    run(next);
}

void StreamSession::detach() {
    std::lock_guard lock(mu_);
    reactor_ = nullptr;
    queue_.clear();
    spare_leases_.clear();
}

StreamSession::Next StreamSession::next_locked() {
    Next next;
    if (writing_ || finished_ || !reactor_) return next;
    if (started_ && !queue_.empty()) {
        writing_ = true;
        next.write = &queue_.front();  // a deque keeps it in place while others are queued
        next.more = wrote_first_ && queue_.size() > 1;
        wrote_first_ = true;
    } else if (finish_wanted_ && (started_ || finish_at_once_)) {
        // A shutdown queued while RemoteHost::connect ran waits for start():
        // the worker reads registered, then shutdown, then the end.
        finished_ = true;
        queue_.clear();
        next.finish = *finish_wanted_;
    }
    return next;
}

void StreamSession::run(Next next) {
    // Outside the lock: gRPC may complete the operation at once on another
    // thread, which then takes the lock. The reactor stays alive meanwhile:
    // OnDone comes only after Finish, which waits for the write in flight.
    // The hint is safe with one write in flight: gRPC completes a hinted
    // write at once while it holds less than its write buffer (64 KiB), and
    // the next write, or the finish, sends what it holds.
    if (next.write) reactor_->StartWrite(next.write, next.more ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions());
    if (next.finish) reactor_->Finish(*next.finish);
}

// ---- WorkReactor -------------------------------------------------------------------

namespace {

/// Compares in time independent of where the strings differ.
bool same_secret(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace

WorkReactor::WorkReactor(std::shared_ptr<ServerShared> shared, grpc::CallbackServerContext* context)
    : shared_(std::move(shared)),
      context_(context),
      session_(std::make_shared<StreamSession>(this, shared_->max_message_bytes)) {
    bool stopping = false;
    {
        std::lock_guard lock(shared_->mu);
        stopping = shared_->stopping;
        shared_->sessions.insert(session_);
    }
    if (stopping) {
        session_->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "cronoq: the worker server is stopping"), true);
    } else if (!authorized()) {
        session_->finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                      shared_->accept_client_certificates
                                          ? "cronoq: missing or unknown bearer token (metadata authorization: "
                                            "Bearer <token>) and no verified client certificate"
                                          : "cronoq: missing or unknown bearer token (metadata authorization: "
                                            "Bearer <token>)"),
                         true);
    } else {
        StartRead(&in_);
    }
}

bool WorkReactor::authorized() const {
    if (shared_->accept_client_certificates) {
        const auto auth = context_->auth_context();
        if (auth && auth->IsPeerAuthenticated()) return true;
    }
    const auto& metadata = context_->client_metadata();
    for (auto [it, end] = metadata.equal_range("authorization"); it != end; ++it) {
        const std::string_view value(it->second.data(), it->second.size());
        constexpr std::string_view scheme = "Bearer ";
        if (value.substr(0, scheme.size()) != scheme) continue;
        const auto token = value.substr(scheme.size());
        bool known = false;
        for (const auto& t : shared_->tokens) known |= same_secret(token, t);
        if (known) return true;
    }
    return false;
}

void WorkReactor::OnReadDone(bool ok) {
    if (!ok) {
        on_stream_end();
        return;
    }
    if (!worker_) {
        on_register();
        return;
    }
    if (in_.has_set_slots()) {
        session_->send(wire::slots(shared_->host->set_slots(worker_, in_.set_slots().slots())));
    } else if (auto report = wire::report(in_)) {
        shared_->host->report(worker_, std::move(*report));
    } else if (in_.has_register_()) {
        session_->finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cronoq: register sent twice"), true);
        return;
    }  // else a message of a newer protocol: ignored
    StartRead(&in_);
}

void WorkReactor::on_register() {
    if (!in_.has_register_()) {
        session_->finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                      "cronoq: the first message of a stream must be register"),
                         true);
        return;
    }
    const auto& reg = in_.register_();
    if (reg.protocol_version() != protocol_version) {
        session_->finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                      "cronoq: protocol_version " + std::to_string(reg.protocol_version()) +
                                          " is not supported: this server speaks protocol_version " +
                                          std::to_string(protocol_version)),
                         true);
        return;
    }
    auto outcome = shared_->host->connect(wire::registration(reg), session_);
    if (auto* refused = std::get_if<ConnectRefused>(&outcome)) {
        grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE;
        switch (refused->kind) {
            case ConnectRefused::Kind::UnknownPool: code = grpc::StatusCode::NOT_FOUND; break;
            case ConnectRefused::Kind::NotRemote: code = grpc::StatusCode::FAILED_PRECONDITION; break;
            case ConnectRefused::Kind::ShuttingDown: code = grpc::StatusCode::UNAVAILABLE; break;
            case ConnectRefused::Kind::NotLeader:
                // A redirect: trailing metadata, which a worker reads with the
                // status (docs/remote.md, Redirects).
                code = grpc::StatusCode::FAILED_PRECONDITION;
                context_->AddTrailingMetadata(std::string(shard_key), refused->shard);
                if (refused->endpoint) context_->AddTrailingMetadata(std::string(shard_endpoint_key), *refused->endpoint);
                break;
        }
        session_->finish(grpc::Status(code, "cronoq: " + refused->message), true);
        return;
    }
    const auto& grant = std::get<WorkerGrant>(outcome);
    worker_ = grant.id;
    session_->start(wire::registered(grant, shared_->max_message_bytes));
    StartRead(&in_);
}

void WorkReactor::on_stream_end() {
    // The worker closed its side, went away or the call was cancelled
    // (an oversized message): its leases go back at once, not when its
    // lease TTL runs out, and what is queued for it is moot.
    if (worker_ && !disconnected_) {
        disconnected_ = true;
        shared_->host->disconnect(worker_);
    }
    session_->finish(grpc::Status::OK, true);
}

void WorkReactor::OnWriteDone(bool ok) { session_->write_done(ok); }

void WorkReactor::OnDone() {
    session_->detach();
    if (worker_ && !disconnected_) shared_->host->disconnect(worker_);
    {
        std::lock_guard lock(shared_->mu);
        shared_->sessions.erase(session_);
    }
    shared_->streams_ended.notify_all();
    delete this;
}

}  // namespace cronoq::detail
