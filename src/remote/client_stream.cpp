// The C++ worker's stream: gRPC's callback client, one write in flight at a
// time, events handed to the worker in order. As on the server
// (server_session.hpp), a write with more queued behind it carries the
// buffer hint, so a run of completes leaves in one go, and written
// `complete` messages are reused.
#include "client_stream.hpp"

#include "wire.hpp"

#include <cronoq/remote/remote_worker_error.hpp>

#include "cronoq/v1/workers.grpc.pb.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

namespace cronoq::detail {

class WorkerChannel {
public:
    explicit WorkerChannel(std::shared_ptr<grpc::Channel> channel)
        : channel_(std::move(channel)), stub_(v1::Workers::NewStub(channel_)) {}
    v1::Workers::Stub& stub() { return *stub_; }

private:
    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<v1::Workers::Stub> stub_;
};

// RemoteWorkerError::Code names gRPC's status codes by gRPC's numbers: a
// stream's end (StreamClosed::code) is compared with them as it comes.
static_assert(RemoteWorkerError::Code::InvalidArgument == grpc::StatusCode::INVALID_ARGUMENT);
static_assert(RemoteWorkerError::Code::NotFound == grpc::StatusCode::NOT_FOUND);
static_assert(RemoteWorkerError::Code::FailedPrecondition == grpc::StatusCode::FAILED_PRECONDITION);
static_assert(RemoteWorkerError::Code::Unauthenticated == grpc::StatusCode::UNAUTHENTICATED);

namespace {

/// Written `complete` messages kept for reuse: about a busy worker's slots.
constexpr std::size_t max_spare_completes = 256;

bool is_complete(const WorkerSend& message) {
    const auto* report = std::get_if<RemoteReport>(&message);
    return report && std::holds_alternative<RemoteReport::Complete>(report->what);
}

std::string read_pem(const std::filesystem::path& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw RemoteWorkerError(RemoteWorkerError::Code::InvalidArgument,
                                std::string("cronoq: cannot read the TLS ") + what + " " + path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

class ClientStreamImpl final : public ClientStream, public grpc::ClientBidiReactor<v1::WorkerMessage, v1::ServerMessage> {
public:
    explicit ClientStreamImpl(OnEvent on_event) : on_event_(std::move(on_event)) {}

    void begin(std::shared_ptr<ClientStreamImpl> self, std::shared_ptr<WorkerChannel> channel,
               const std::string& token, RegisterMessage registration) {
        self_ = std::move(self);
        channel_ = std::move(channel);  // the call needs it until its end
        if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
        channel_->stub().async()->Work(&context_, this);
        // Held until the read side ends and no write is in flight, so that
        // OnDone (which ends this object) never races a send.
        AddHold();
        send(std::move(registration));
        StartRead(&in_);
        StartCall();
    }

    void send(WorkerSend message) override {
        bool start = false;
        {
            std::lock_guard lock(mu_);
            if (read_closed_ || writes_done_wanted_) return;
            std::unique_ptr<v1::Complete> reused;
            if (is_complete(message) && !spare_completes_.empty()) {
                reused = std::move(spare_completes_.back());
                spare_completes_.pop_back();
            }
            wire::to_message(message, out_.emplace_back(), std::move(reused));
            start = take_next_locked();
        }
        if (start) start_next();
    }

    void close() override {
        bool start = false;
        {
            std::lock_guard lock(mu_);
            if (writes_done_wanted_) return;
            writes_done_wanted_ = true;
            start = take_next_locked();
        }
        if (start) start_next();
    }

    void cancel() override { context_.TryCancel(); }

    void OnWriteDone(bool ok) override {
        bool start = false;
        {
            std::lock_guard lock(mu_);
            if (out_.front().has_complete() && spare_completes_.size() < max_spare_completes)
                spare_completes_.emplace_back(out_.front().release_complete());
            out_.pop_front();
            writing_ = false;
            if (!ok) out_.clear();  // the stream ended: the read side reports it
            start = take_next_locked();
        }
        if (start) start_next();
    }

    void OnWritesDoneDone(bool) override {
        bool start = false;
        {
            std::lock_guard lock(mu_);
            writing_ = false;
            start = take_next_locked();
        }
        if (start) start_next();
    }

    void OnReadDone(bool ok) override {
        if (!ok) {
            bool start = false;
            {
                std::lock_guard lock(mu_);
                read_closed_ = true;
                start = take_next_locked();
            }
            if (start) start_next();
            return;
        }
        if (auto event = wire::to_event(in_)) on_event_(std::move(*event));
        StartRead(&in_);
    }

    void OnDone(const grpc::Status& status) override {
        // gRPC touches nothing of this object after OnDone, and this
        // function touches nothing after the event, which carries the last
        // reference to it (and so to the channel) off gRPC's thread.
        auto on_event = std::move(on_event_);
        StreamClosed closed;
        closed.code = static_cast<int>(status.error_code());
        closed.message = status.error_message();
        const auto& trailers = context_.GetServerTrailingMetadata();
        const auto value = [&](std::string_view key) -> std::optional<std::string> {
            const auto it = trailers.find(grpc::string_ref(key.data(), key.size()));
            if (it == trailers.end()) return std::nullopt;
            return std::string(it->second.data(), it->second.size());
        };
        closed.shard = value(shard_key);
        closed.shard_endpoint = value(shard_endpoint_key);
        closed.stream = std::move(self_);
        on_event(std::move(closed));
    }

private:
    enum class Action { None, Write, WritesDone, Release };

    /// Decides the next operation (with the lock held); `start_next` runs it.
    bool take_next_locked() {
        if (writing_ || released_) return false;
        if (read_closed_) {
            next_ = Action::Release;
            released_ = true;
            return true;
        }
        if (!out_.empty()) {
            next_ = Action::Write;
            // The first write goes with the call's headers: never held back.
            more_ = wrote_first_ && out_.size() > 1;
            wrote_first_ = true;
        } else if (writes_done_wanted_ && !writes_done_sent_) {
            writes_done_sent_ = true;
            next_ = Action::WritesDone;
        } else {
            return false;
        }
        writing_ = true;
        return true;
    }

    void start_next() {
        Action action;
        const v1::WorkerMessage* message = nullptr;
        bool more = false;
        {
            std::lock_guard lock(mu_);
            action = next_;
            more = more_;
            if (action == Action::Write) message = &out_.front();
        }
        switch (action) {
            // With the hint gRPC completes the write at once and holds its
            // bytes for the next write (or WritesDone), which sends them all.
            case Action::Write: StartWrite(message, more ? grpc::WriteOptions().set_buffer_hint() : grpc::WriteOptions()); break;
            case Action::WritesDone: StartWritesDone(); break;
            case Action::Release: RemoveHold(); break;
            case Action::None: break;
        }
    }

    OnEvent on_event_;
    std::shared_ptr<ClientStreamImpl> self_;  // alive until OnDone
    std::shared_ptr<WorkerChannel> channel_;
    grpc::ClientContext context_;
    v1::ServerMessage in_;

    std::mutex mu_;
    std::deque<v1::WorkerMessage> out_;  // the front is in flight while writing_
    std::vector<std::unique_ptr<v1::Complete>> spare_completes_;  // written ones, for reuse
    Action next_ = Action::None;
    bool more_ = false;  // the next write has others queued behind it
    bool wrote_first_ = false;
    bool writing_ = false;
    bool read_closed_ = false;
    bool writes_done_wanted_ = false;
    bool writes_done_sent_ = false;
    bool released_ = false;
};

}  // namespace

std::shared_ptr<WorkerChannel> make_channel(const std::string& target, const std::optional<TlsFiles>& tls) {
    return make_channel(parse_target(target, tls.has_value()), tls);
}

std::shared_ptr<WorkerChannel> make_channel(const ParsedTarget& parsed, const std::optional<TlsFiles>& tls) {
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    if (parsed.tls) {
        // Without tls settings (a redirect from plaintext to https://): the
        // system's roots, no client certificate.
        grpc::SslCredentialsOptions options;
        if (tls && tls->ca) options.pem_root_certs = read_pem(*tls->ca, "ca");
        if (tls && (!tls->cert.empty() || !tls->key.empty())) {
            options.pem_cert_chain = read_pem(tls->cert, "cert");
            options.pem_private_key = read_pem(tls->key, "key");
        }
        credentials = grpc::SslCredentials(options);
    } else {
        credentials = grpc::InsecureChannelCredentials();
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);  // the server's max_message_bytes bounds what it sends
    args.SetMaxSendMessageSize(-1);     // and what it accepts, with a status naming it
    return std::make_shared<WorkerChannel>(grpc::CreateCustomChannel(parsed.address, credentials, args));
}

std::shared_ptr<ClientStream> ClientStream::open(const std::shared_ptr<WorkerChannel>& channel, const std::string& token,
                                                 RegisterMessage registration, OnEvent on_event) {
    auto stream = std::make_shared<ClientStreamImpl>(std::move(on_event));
    stream->begin(stream, channel, token, std::move(registration));
    return stream;
}

}  // namespace cronoq::detail
