#pragma once
// Message building for the engine's errors. Joins by appending: GCC 12 at
// -O2 warns falsely (-Wrestrict) on chains of std::string operator+ that
// start with a literal.
#include <initializer_list>
#include <string>
#include <string_view>

namespace cronoq::core::detail {

inline std::string cat(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (std::string_view p : parts) out.append(p);
    return out;
}

inline std::string quoted(std::string_view s) { return cat({"\"", s, "\""}); }

}  // namespace cronoq::core::detail
