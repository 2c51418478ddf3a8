// A client's watch on a PostgreSQL store: notifications of the commits that
// end tasks, waited for on the connection's socket beside an eventfd that
// interrupt() writes (docs/postgres.md, "Clients").
#include "client_access.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace cronoq::store::postgres {

namespace {
constexpr std::string_view ends_channel = "cronoq_ends";
}

PostgresChangeWatch::PostgresChangeWatch(std::string conninfo, std::string schema,
                                         std::chrono::nanoseconds connect_timeout)
    : conninfo_(std::move(conninfo)), schema_(std::move(schema)), connect_timeout_(connect_timeout) {
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) throw StoreError(StoreErrorKind::Io, std::string("cannot make an eventfd: ") + std::strerror(errno));
    try {
        listen();
    } catch (...) {
        ::close(wake_fd_);
        throw;
    }
}

PostgresChangeWatch::~PostgresChangeWatch() { ::close(wake_fd_); }

void PostgresChangeWatch::listen() {
    connection_.reset();
    auto connection = std::make_unique<Connection>(conninfo_, connect_timeout_);
    connection->exec("LISTEN " + std::string(ends_channel));
    connection_ = std::move(connection);
}

bool PostgresChangeWatch::wait(std::chrono::milliseconds timeout) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + timeout;
    if (!connection_ || !connection_->alive()) {
        listen();
        return true;
    }
    for (;;) {
        if (connection_->take_notifications(ends_channel, schema_) > 0) return true;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now());
        if (left.count() <= 0) return false;
        pollfd fds[2] = {{connection_->socket(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        const int ready = ::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left.count(), 60000)));
        if (ready < 0 && errno != EINTR)
            throw StoreError(StoreErrorKind::Io, std::string("cannot wait for notifications: ") + std::strerror(errno));
        if (ready > 0 && (fds[1].revents & POLLIN)) {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto n = ::read(wake_fd_, &count, sizeof count);
            return false;
        }
    }
}

void PostgresChangeWatch::interrupt() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

}  // namespace cronoq::store::postgres
