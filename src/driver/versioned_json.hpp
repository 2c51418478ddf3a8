#pragma once
// The JSON texts the scheduler keeps in a store's opaque columns (a task's
// `options`, a recurring schedule's `definition`; docs/store.md, "The
// scheduler with a store") carry their format's version as "v": a reader
// refuses any other version rather than guess what the text means.
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace cronoq::detail {

/// An empty object of format `version`, for an encoder to fill.
inline nlohmann::json versioned_object(int version) {
    nlohmann::json j = nlohmann::json::object();
    j["v"] = version;
    return j;
}

/// The object in `text`, which must be of format `version`. Throws
/// nlohmann::json's errors for text that is not JSON, and
/// std::runtime_error "<what> of format version N (this cronoq reads
/// version M)" for another version (or none: N is 0).
inline nlohmann::json parse_versioned(std::string_view text, int version, std::string_view what) {
    nlohmann::json j = nlohmann::json::parse(text);
    const int found = j.value("v", 0);
    if (found != version)
        throw std::runtime_error(std::string(what) + " of format version " + std::to_string(found) +
                                 " (this cronoq reads version " + std::to_string(version) + ")");
    return j;
}

}  // namespace cronoq::detail
