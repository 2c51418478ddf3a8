// What every store backend shares.
#include <cronoq/store/store.hpp>

namespace cronoq {

std::string_view to_string(StoreErrorKind kind) {
    switch (kind) {
    case StoreErrorKind::Io: return "io";
    case StoreErrorKind::Corrupt: return "corrupt";
    case StoreErrorKind::SchemaTooNew: return "schema_too_new";
    case StoreErrorKind::Fenced: return "fenced";
    case StoreErrorKind::Busy: return "busy";
    }
    return "unknown";
}

}  // namespace cronoq
