// The versioned JSON texts a store keeps for the scheduler (a task's
// options, a recurring schedule's definition): each reader refuses a
// format version other than its own with a message that names the text and
// both versions (docs/store.md, "The scheduler with a store").
#include "driver/recurring_definition.hpp"
#include "driver/task_options.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

using cronoq::Priority;
using cronoq::detail::decode_options;
using cronoq::detail::decode_schedule;
using cronoq::detail::encode_options;
using cronoq::detail::encode_schedule;

std::string version_error_of(const auto& read) {
    try {
        read();
    } catch (const std::runtime_error& error) {
        return error.what();
    }
    return "no error";
}

TEST(VersionedJson, TaskOptionsOfAnotherVersionAreRefusedByName) {
    cronoq::detail::TaskRequest request;
    request.priority = Priority::High;
    EXPECT_EQ(decode_options(encode_options(request, {})).priority, Priority::High);
    EXPECT_EQ(version_error_of([] { decode_options(R"({"v":2,"priority":0})"); }),
              "task options of format version 2 (this cronoq reads version 1)");
    EXPECT_EQ(version_error_of([] { decode_options(R"({"priority":0})"); }),
              "task options of format version 0 (this cronoq reads version 1)");
}

TEST(VersionedJson, AScheduleOfAnotherVersionIsRefusedByName) {
    cronoq::detail::RecurringRequest request;
    request.cron = "*/5 * * * *";
    request.tz = "UTC";
    request.task.kind = "report";
    const cronoq::detail::StoredSchedule stored = decode_schedule(encode_schedule(request, "\x01\xff", {}));
    EXPECT_EQ(stored.request.cron, "*/5 * * * *");
    EXPECT_EQ(stored.request.task.kind, "report");
    EXPECT_EQ(stored.payload, "\x01\xff");
    EXPECT_EQ(version_error_of([] { decode_schedule(R"({"v":7,"cron":"* * * * *"})"); }),
              "a schedule of format version 7 (this cronoq reads version 1)");
}

}  // namespace
