#pragma once
// The one place cronoq reads Asio's internals (asio::detail). Asio 1.22 has
// no public way to ask an io_context for the concurrency hint it was made
// with: the hint is kept by its scheduler service, reachable only through
// asio::detail. Everything else uses Asio's public interface
// (detail/wait_list.hpp tells a coroutine's wait by its public token).
// tests/driver/asio_internals_test.cpp fails if Asio moves or renames what
// this reads.
#include <asio/io_context.hpp>

#include <optional>

namespace cronoq::detail::asio_internals {

/// The concurrency hint `io` was constructed with (1 for
/// `io_context(1)`, ASIO_CONCURRENCY_HINT_DEFAULT for `io_context()`);
/// empty where Asio does not keep it in a scheduler service (Windows' IOCP).
inline std::optional<int> concurrency_hint(asio::io_context& io) {
#if defined(ASIO_HAS_IOCP)
    (void)io;
    return std::nullopt;
#else
    return asio::use_service<asio::detail::scheduler>(io).concurrency_hint();
#endif
}

}  // namespace cronoq::detail::asio_internals
