// The plain configuration structs of resources, bounds and autoscaling:
// their shape (aggregates with defaults, docs/guide/README.md) and their validation
// (a message naming the field).
#include <cronoq/bounds.hpp>  // first: the public header compiles on its own

#include "core/config_checks.hpp"

#include <cronoq/autoscale.hpp>
#include <cronoq/resource.hpp>
#include <cronoq/scaler.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace cronoq::core::detail::config_checks_test {
namespace {

using namespace std::chrono_literals;

static_assert(std::is_aggregate_v<Bounds>);
static_assert(std::is_aggregate_v<AutoscaleConfig>);
static_assert(std::is_aggregate_v<ScalerInput>);

TEST(Bounds, IsAnUnboundedAggregateByDefault) {
    EXPECT_EQ(Bounds{}.max_pending, std::numeric_limits<std::size_t>::max());
    EXPECT_FALSE(Bounds{}.bounded());
    const Bounds hundred{100};
    EXPECT_EQ(hundred.max_pending, 100u);
    EXPECT_TRUE(hundred.bounded());
}

TEST(OverflowPolicy, HasStableNames) {
    EXPECT_EQ(to_string(OverflowPolicy::Wait), "wait");
    EXPECT_EQ(to_string(OverflowPolicy::Reject), "reject");
    EXPECT_EQ(to_string(OverflowPolicy::ShedLowest), "shed_lowest");
    EXPECT_EQ(to_string(OverflowPolicy::ShedOldest), "shed_oldest");
    static_assert(to_string(OverflowPolicy::Wait) == "wait");  // usable at compile time
}

TEST(AutoscaleConfig, DefaultsAreThoseOfTheSpec) {
    const AutoscaleConfig c{};
    EXPECT_EQ(c.interval, 1s);
    EXPECT_EQ(c.target_utilization, 0.8);
    EXPECT_EQ(c.drain_time, 10s);
    for (auto slo : c.slo) EXPECT_EQ(slo, 0s);
    EXPECT_EQ(c.reservation_horizon, 60s);
    EXPECT_EQ(c.max_step_up_ratio, 1.0);
    EXPECT_EQ(c.max_step_up_abs, 4u);
    EXPECT_EQ(c.stabilization_window, 30s);
    EXPECT_EQ(c.max_step_down, 1u);
    EXPECT_EQ(c.cooldown, 5s);
    EXPECT_EQ(c.ewma_alpha, 0.3);
    EXPECT_EQ(check_autoscale(c), std::nullopt);
}

TEST(AutoscaleConfig, FieldsAreInSpecOrder) {
    const AutoscaleConfig c{2s, 0.5, 20s, {1s, 2s, 0s, 0s}, 90s, 0.5, 2, 10s, 3, 1s, 0.5};
    EXPECT_EQ(c.interval, 2s);
    EXPECT_EQ(c.target_utilization, 0.5);
    EXPECT_EQ(c.drain_time, 20s);
    EXPECT_EQ(c.slo[1], 2s);
    EXPECT_EQ(c.reservation_horizon, 90s);
    EXPECT_EQ(c.max_step_up_ratio, 0.5);
    EXPECT_EQ(c.max_step_up_abs, 2u);
    EXPECT_EQ(c.stabilization_window, 10s);
    EXPECT_EQ(c.max_step_down, 3u);
    EXPECT_EQ(c.cooldown, 1s);
    EXPECT_EQ(c.ewma_alpha, 0.5);
}

// Each bad value, alone, gives the message naming its field.
TEST(AutoscaleConfig, BadValuesAreNamed) {
    const double nan = std::nan("");
    struct Case {
        void (*spoil)(AutoscaleConfig&, double nan);
        const char* message;
    };
    const std::vector<Case> cases{
        {[](AutoscaleConfig& c, double) { c.interval = 0s; }, "autoscale.interval must be positive"},
        {[](AutoscaleConfig& c, double n) { c.target_utilization = n; }, "autoscale.target_utilization must be in (0, 1]"},
        {[](AutoscaleConfig& c, double) { c.target_utilization = 0; }, "autoscale.target_utilization must be in (0, 1]"},
        {[](AutoscaleConfig& c, double) { c.target_utilization = 1.5; }, "autoscale.target_utilization must be in (0, 1]"},
        {[](AutoscaleConfig& c, double) { c.drain_time = -1s; }, "autoscale.drain_time must be positive"},
        {[](AutoscaleConfig& c, double) { c.slo[2] = -1ms; }, "autoscale.slo[2] (normal) must not be negative"},
        {[](AutoscaleConfig& c, double) { c.reservation_horizon = -1s; },
         "autoscale.reservation_horizon must not be negative"},
        {[](AutoscaleConfig& c, double n) { c.max_step_up_ratio = n; },
         "autoscale.max_step_up_ratio must be a finite number >= 0"},
        {[](AutoscaleConfig& c, double) { c.max_step_up_ratio = -0.5; },
         "autoscale.max_step_up_ratio must be a finite number >= 0"},
        {[](AutoscaleConfig& c, double) { c.max_step_up_abs = 0; }, "autoscale.max_step_up_abs must be at least 1"},
        {[](AutoscaleConfig& c, double) { c.stabilization_window = -1s; },
         "autoscale.stabilization_window must not be negative"},
        {[](AutoscaleConfig& c, double) { c.max_step_down = 0; }, "autoscale.max_step_down must be at least 1"},
        {[](AutoscaleConfig& c, double) { c.cooldown = -1s; }, "autoscale.cooldown must not be negative"},
        {[](AutoscaleConfig& c, double n) { c.ewma_alpha = n; }, "autoscale.ewma_alpha must be in (0, 1]"},
        {[](AutoscaleConfig& c, double) { c.ewma_alpha = 0; }, "autoscale.ewma_alpha must be in (0, 1]"},
        {[](AutoscaleConfig& c, double) { c.ewma_alpha = 1.01; }, "autoscale.ewma_alpha must be in (0, 1]"},
    };
    for (const Case& c : cases) {
        AutoscaleConfig config;
        c.spoil(config, nan);
        EXPECT_EQ(check_autoscale(config), std::string(c.message));
    }
    // The edges that are allowed.
    AutoscaleConfig edges;
    edges.target_utilization = 1.0;
    edges.ewma_alpha = 1.0;
    edges.stabilization_window = 0s;
    edges.cooldown = 0s;
    edges.max_step_up_ratio = 0;
    EXPECT_EQ(check_autoscale(edges), std::nullopt);
}

TEST(Bounds, ZeroIsRejectedWithTheFieldAsWritten) {
    EXPECT_EQ(check_bounds(Bounds{}), std::nullopt);
    EXPECT_EQ(check_bounds(Bounds{1}), std::nullopt);
    EXPECT_EQ(check_bounds(Bounds{0}), "bounds.max_pending must be at least 1");
    EXPECT_EQ(check_bounds(Bounds{0}, "global_bounds"), "global_bounds.max_pending must be at least 1");
}

TEST(Resource, DeclarationsAreChecked) {
    EXPECT_EQ(check_resource(Resource::semaphore("db", 1)), std::nullopt);
    EXPECT_EQ(check_resource(Resource::token_bucket("api", 0.0, 1)), std::nullopt);  // paused, but valid
    EXPECT_EQ(check_resource(Resource::semaphore("", 1)), "resource name must not be empty");
    EXPECT_EQ(check_resource(Resource::semaphore("db", 0)), "resource \"db\": permits must be at least 1");
    EXPECT_EQ(check_resource(Resource::token_bucket("api", 1.0, 0)), "resource \"api\": burst must be at least 1");
    EXPECT_EQ(check_resource(Resource::token_bucket("api", -2.0, 1)),
              "resource \"api\": rate_per_s must be a finite number >= 0");
    EXPECT_EQ(check_resource(Resource::token_bucket("api", std::nan(""), 1)),
              "resource \"api\": rate_per_s must be a finite number >= 0");
    EXPECT_EQ(check_resource(Resource::token_bucket("api", std::numeric_limits<double>::infinity(), 1)),
              "resource \"api\": rate_per_s must be a finite number >= 0");

    const std::vector<Resource> twice{Resource::semaphore("db", 1), Resource::token_bucket("db", 1.0, 1)};
    EXPECT_EQ(check_resources(twice), "resource \"db\": declared twice");
    const std::vector<Resource> fine{Resource::semaphore("db", 1), Resource::token_bucket("api", 1.0, 1)};
    EXPECT_EQ(check_resources(fine), std::nullopt);
}

}  // namespace
}  // namespace cronoq::core::detail::config_checks_test
