#pragma once
// The page's files, embedded at build time (embed_ui.cmake, from ui/).
#include <string_view>
#include <vector>

namespace cronoq::dashboard_detail {

struct UiAsset {
    std::string_view path;  ///< "/index.html", "/app.js", ...
    std::string_view content_type;
    std::string_view bytes;
};

const std::vector<UiAsset>& ui_assets();

}  // namespace cronoq::dashboard_detail
