#include <cronoq/codec.hpp>

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace app {
struct Order {
    int id = 0;
    std::string item;
    bool operator==(const Order&) const = default;
};
inline void to_json(nlohmann::json& j, const Order& o) { j = {{"id", o.id}, {"item", o.item}}; }
inline void from_json(const nlohmann::json& j, Order& o) {
    j.at("id").get_to(o.id);
    j.at("item").get_to(o.item);
}

/// Has a JSON conversion, but its own codec wins.
struct Tagged {
    int value = 0;
};
inline void to_json(nlohmann::json& j, const Tagged& t) { j = t.value; }
inline void from_json(const nlohmann::json& j, Tagged& t) { j.get_to(t.value); }

struct Opaque {
    int value = 0;
};

/// Converts to JSON only: no way back, so no codec.
struct WriteOnly {
    int value = 0;
};
inline void to_json(nlohmann::json& j, const WriteOnly& w) { j = w.value; }

/// Not default-constructible: nlohmann_json reads it through an
/// adl_serializer that returns the value.
struct Amount {
    explicit Amount(long c) : cents(c) {}
    long cents;
};
}  // namespace app

template <>
struct nlohmann::adl_serializer<app::Amount> {
    static app::Amount from_json(const json& j) { return app::Amount(j.get<long>()); }
    static void to_json(json& j, const app::Amount& a) { j = a.cents; }
};

template <>
struct cronoq::codec<app::Tagged> {
    static std::string encode(const app::Tagged& t) { return "tag:" + std::to_string(t.value); }
    static app::Tagged decode(std::string_view bytes) { return {std::stoi(std::string(bytes.substr(4)))}; }
};

static_assert(cronoq::has_codec<std::string>);
static_assert(cronoq::has_codec<int>);
static_assert(cronoq::has_codec<std::vector<std::string>>);
static_assert(cronoq::has_codec<std::map<std::string, int>>);
static_assert(cronoq::has_codec<app::Order>);
static_assert(cronoq::has_codec<app::Tagged>);
static_assert(!cronoq::has_codec<app::Opaque>);
static_assert(!cronoq::has_codec<app::WriteOnly>);
static_assert(cronoq::has_codec<app::Amount>);
static_assert(cronoq::require_codec<app::Order>::value);

TEST(Codec, StringBytesPassAsTheyAre) {
    const std::string bytes("a\0b\xff", 4);
    EXPECT_EQ(cronoq::codec<std::string>::encode(bytes), bytes);
    EXPECT_EQ(cronoq::codec<std::string>::decode(bytes), bytes);
}

TEST(Codec, JsonTypesRoundTripAsJsonText) {
    const app::Order order{7, "tea"};
    const std::string text = cronoq::codec<app::Order>::encode(order);
    EXPECT_EQ(text, R"({"id":7,"item":"tea"})");
    EXPECT_EQ(cronoq::codec<app::Order>::decode(text), order);
    EXPECT_EQ(cronoq::codec<std::vector<int>>::decode(cronoq::codec<std::vector<int>>::encode({1, 2})),
              (std::vector<int>{1, 2}));
}

TEST(Codec, AnAdlSerializerServesTypesWithoutADefaultConstructor) {
    EXPECT_EQ(cronoq::codec<app::Amount>::encode(app::Amount(250)), "250");
    EXPECT_EQ(cronoq::codec<app::Amount>::decode("99").cents, 99);
}

TEST(Codec, UserSpecializationWinsOverJson) {
    EXPECT_EQ(cronoq::codec<app::Tagged>::encode({5}), "tag:5");
    EXPECT_EQ(cronoq::codec<app::Tagged>::decode("tag:9").value, 9);
}

TEST(Codec, UndecodableBytesThrow) {
    EXPECT_THROW(cronoq::codec<app::Order>::decode("not json"), std::exception);
    EXPECT_THROW(cronoq::codec<app::Order>::decode(R"({"id":"x"})"), std::exception);
}
