// A task's traceparent kept through the store (docs/guide/operations.md,
// "Tracing"), on each backend: a task recovered by the next leader still
// carries its submitter's trace context to its attempt.
#include "durable_support.hpp"

#include <cronoq/cronoq.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>

using namespace std::chrono_literals;
using namespace cronoq;

namespace {

class DurableTraceparent : public ::testing::TestWithParam<test::Backend> {};

}  // namespace

TEST_P(DurableTraceparent, ARecoveredTaskKeepsItsTraceparent) {
    test::TestStore store(GetParam());
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    TaskId id{};
    {
        auto sched = test::Durable::builder().threads(1).pool(test::identity_pool("p")).store(store.open()).open();
        sched.pause("p");  // not run by this leader
        id = sched.submit(Task<std::string>("x").pool("p").traceparent(tp)).id();
        sched.shutdown(0s);
    }
    std::mutex mu;
    std::optional<std::string> seen;
    auto sched = test::Durable::builder()
                     .threads(1)
                     .observer(AttemptObserver{[&](const AttemptStart& s) {
                                                   std::lock_guard lock(mu);
                                                   seen = s.traceparent;
                                               },
                                               {}})
                     .pool(test::identity_pool("p"))
                     .store(store.open())
                     .open();
    sched.resume("p");
    auto h = sched.find(TaskRef(id));
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(*h->get(), "x");
    {
        std::lock_guard lock(mu);
        EXPECT_EQ(seen, tp);
    }
    sched.shutdown(0s);
}

INSTANTIATE_TEST_SUITE_P(Stores, DurableTraceparent, ::testing::ValuesIn(test::tested_backends()), test::BackendName{});
