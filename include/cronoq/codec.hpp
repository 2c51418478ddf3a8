#pragma once
// codec<T>: how payloads and outputs cross a store (docs/guide/durability.md) or reach
// remote workers (docs/remote.md) as bytes.
#include <nlohmann/json.hpp>

#include <concepts>
#include <string>
#include <string_view>

namespace cronoq {

/// Turns a `T` into bytes and back:
///
///     static std::string encode(const T&);
///     static T decode(std::string_view bytes);
///
/// Provided for `std::string` (the bytes as they are) and for every `T`
/// that nlohmann_json can convert both ways (`to_json`/`from_json` found by
/// ADL, or an `nlohmann::adl_serializer<T>` specialization): JSON text.
/// Specialize it for your own types to choose another encoding; an explicit
/// specialization wins over the JSON one.
///
/// `encode` may throw to refuse a value (the scheduler then rejects the
/// submission as `SubmitError::Invalid`, naming the codec's message);
/// `decode` throws on bytes it cannot read (a recovered row that cannot be
/// decoded ends `Failed` with `"decode: <message>"`).
template <class T>
struct codec;

namespace detail {

/// What the JSON codec needs: a conversion to `nlohmann::json` and one back.
template <class T>
concept json_codable = requires(nlohmann::json& json, const T& value) {
    nlohmann::adl_serializer<T>::to_json(json, value);
    { json.template get<T>() } -> std::same_as<T>;
};

}  // namespace detail

template <>
struct codec<std::string> {
    static std::string encode(const std::string& value) { return value; }
    static std::string decode(std::string_view bytes) { return std::string(bytes); }
};

template <class T>
    requires detail::json_codable<T>
struct codec<T> {
    /// Compact JSON text; invalid UTF-8 in strings is replaced rather than
    /// thrown, so any value nlohmann_json can hold encodes.
    static std::string encode(const T& value) {
        const nlohmann::json json = value;
        return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    /// Throws `nlohmann::json::exception` (a `std::exception`) on text that
    /// is not JSON or does not convert to `T`.
    static T decode(std::string_view bytes) { return nlohmann::json::parse(bytes).template get<T>(); }
};

/// True when `codec<T>` is usable: `encode` gives bytes and `decode` gives a `T`.
template <class T>
concept has_codec = requires(const T& value, std::string_view bytes) {
    { codec<T>::encode(value) } -> std::convertible_to<std::string>;
    { codec<T>::decode(bytes) } -> std::same_as<T>;
};

/// `static_assert(cronoq::require_codec<T>::value)` fails to compile with a
/// message naming the missing codec, and the compiler's "in instantiation
/// of require_codec<...>" line names `T`. The scheduler checks its payload
/// and output types with it when a store or a remote pool is used.
template <class T>
struct require_codec {
    static_assert(has_codec<T>,
                  "missing cronoq::codec<T> for a payload or output type used with a store or a remote pool: specialize "
                  "cronoq::codec<T> (encode/decode) or give T nlohmann_json to_json/from_json");
    static constexpr bool value = has_codec<T>;
};

}  // namespace cronoq
