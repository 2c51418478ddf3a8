// Payloads and outputs with their type erased (detail/erased_value.hpp):
// small trivially copyable values held in place, the rest shared; and,
// through the scheduler, in-place values that outlive what held them.
#include "driver_harness.hpp"

#include <cronoq/detail/erased_value.hpp>

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace erased_value_test {

using cronoq::Pool;
using cronoq::Result;
using cronoq::Scheduler;
using cronoq::Task;
using cronoq::TaskContext;
using cronoq::detail::ErasedValue;

namespace {

struct Point {
    double x;
    double y;
};
struct Wide {
    std::array<char, 17> bytes;
};

static_assert(ErasedValue::fits_inline<int>);
static_assert(ErasedValue::fits_inline<Point>);
static_assert(!ErasedValue::fits_inline<Wide>);
static_assert(!ErasedValue::fits_inline<std::string>);

template <class T>
const T& value_of(const ErasedValue& v) {
    return *static_cast<const T*>(v.get());
}

}  // namespace

TEST(ErasedValue, SmallTriviallyCopyableValuesAreHeldInPlaceAndTheRestShared) {
    const auto point = ErasedValue::make(Point{1.5, -2.0});
    EXPECT_TRUE(point.in_place());
    EXPECT_EQ(value_of<Point>(point).x, 1.5);
    EXPECT_EQ(value_of<Point>(point).y, -2.0);

    const auto text = ErasedValue::make(std::string(100, 'a'));
    EXPECT_FALSE(text.in_place());
    EXPECT_EQ(value_of<std::string>(text), std::string(100, 'a'));

    const auto wide = ErasedValue::make(Wide{});
    EXPECT_FALSE(wide.in_place());

    const ErasedValue none;
    EXPECT_FALSE(none);
    EXPECT_EQ(none.get(), nullptr);
    EXPECT_TRUE(point);
    EXPECT_TRUE(text);
}

TEST(ErasedValue, CopiesMovesAndAssignmentsKeepTheValueWhicheverTheForm) {
    ErasedValue a = ErasedValue::make(7);
    ErasedValue b = ErasedValue::make(std::string("shared"));
    ErasedValue c = a;  // in place, copied
    ErasedValue d = b;  // shared, one more owner
    EXPECT_EQ(value_of<int>(c), 7);
    EXPECT_EQ(value_of<std::string>(d), "shared");
    EXPECT_EQ(d.get(), b.get());

    // Each form over the other, both ways.
    c = b;
    EXPECT_FALSE(c.in_place());
    EXPECT_EQ(value_of<std::string>(c), "shared");
    d = a;
    EXPECT_TRUE(d.in_place());
    EXPECT_EQ(value_of<int>(d), 7);

    ErasedValue e = std::move(c);
    EXPECT_EQ(value_of<std::string>(e), "shared");
    e = std::move(d);
    EXPECT_EQ(value_of<int>(e), 7);
    e.reset();
    EXPECT_FALSE(e);
    EXPECT_FALSE(e.in_place());

    // Self-assignment leaves the value.
    ErasedValue& same = b;
    b = same;
    EXPECT_EQ(value_of<std::string>(b), "shared");
}

TEST(ErasedValue, SharingAnInPlaceValueSharesItsOwner) {
    struct Holder {
        ErasedValue value = ErasedValue::make(42);
    };
    auto holder = std::make_shared<Holder>();
    const std::weak_ptr<Holder> watch = holder;
    auto shared = std::static_pointer_cast<const int>(holder->value.share(holder));
    EXPECT_EQ(holder.use_count(), 2);
    holder.reset();
    EXPECT_FALSE(watch.expired());  // the value keeps its owner
    EXPECT_EQ(*shared, 42);
    shared.reset();
    EXPECT_TRUE(watch.expired());

    // A shared value is its own: the owner is not kept.
    auto other = std::make_shared<ErasedValue>(ErasedValue::make(std::string("own")));
    auto own = other->share(other);
    EXPECT_EQ(other.use_count(), 1);
    other.reset();
    EXPECT_EQ(*static_cast<const std::string*>(own.get()), "own");
}

// Through the scheduler: an in-place payload kept by the executor past its
// task, and an in-place output kept past its handle and its scheduler, stay
// whole (AddressSanitizer would see a record freed under them).
TEST(ErasedValue, InPlacePayloadsAndOutputsOutliveTheirTaskHandleAndScheduler) {
    std::vector<std::shared_ptr<const Point>> kept_payloads;
    std::shared_ptr<const Point> output;
    {
        asio::io_context io;
        auto sched = Scheduler<Point, Point>::builder()
                         .pool(Pool<Point, Point>("p").executor_fn(
                             [&](TaskContext, std::shared_ptr<const Point> p) -> asio::awaitable<Result<Point>> {
                                 kept_payloads.push_back(p);
                                 co_return Point{p->y, p->x};
                             }))
                         .build(io.get_executor());
        output = cronoq::test::run(io, [&]() -> asio::awaitable<std::shared_ptr<const Point>> {
            auto h = co_await sched.submit(Task<Point>(Point{3.0, 4.0}));
            co_return co_await h.result();
        }());
        auto stop = sched.shutdown(std::chrono::seconds(0));
        cronoq::test::run(io, std::move(stop));
    }
    ASSERT_EQ(kept_payloads.size(), 1u);
    EXPECT_EQ(kept_payloads[0]->x, 3.0);
    EXPECT_EQ(kept_payloads[0]->y, 4.0);
    ASSERT_NE(output, nullptr);
    EXPECT_EQ(output->x, 4.0);
    EXPECT_EQ(output->y, 3.0);
}

// A payload given shared is not copied: the executor sees the same object.
TEST(ErasedValue, SharedPayloadsReachTheExecutorAsGiven) {
    asio::io_context io;
    const void* seen = nullptr;
    auto sched = Scheduler<int, int>::builder()
                     .pool(Pool<int, int>("p").executor_fn(
                         [&](TaskContext, std::shared_ptr<const int> p) -> asio::awaitable<Result<int>> {
                             seen = p.get();
                             co_return *p;
                         }))
                     .build(io.get_executor());
    const auto given = std::make_shared<const int>(5);
    const int got = cronoq::test::run(io, [&]() -> asio::awaitable<int> {
        auto h = co_await sched.submit(Task<int>::from_shared(given));
        co_return *co_await h.result();
    }());
    EXPECT_EQ(got, 5);
    EXPECT_EQ(seen, given.get());
}

}  // namespace erased_value_test
