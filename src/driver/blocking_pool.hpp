#pragma once
// Threads for blocking work, started on first use. Unlike asio::thread_pool
// it may be destroyed from one of its own threads (the last reference to a
// scheduler can be dropped by an offloaded job): that thread is detached.
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <cstddef>
#include <thread>
#include <vector>

namespace cronoq::detail {

class BlockingPool {
public:
    /// Throws std::system_error if a thread cannot start, after joining the
    /// ones that did.
    explicit BlockingPool(std::size_t threads) : guard_(asio::make_work_guard(io_)) {
        try {
            threads_.reserve(threads);
            for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
        } catch (...) {
            stop();
            throw;
        }
    }
    ~BlockingPool() { stop(); }
    asio::io_context::executor_type get_executor() { return io_.get_executor(); }

private:
    void stop() {
        guard_.reset();
        io_.stop();
        for (auto& t : threads_) {
            if (t.get_id() == std::this_thread::get_id())
                t.detach();
            else
                t.join();
        }
        threads_.clear();
    }

    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> guard_;
    std::vector<std::thread> threads_;
};

}  // namespace cronoq::detail
