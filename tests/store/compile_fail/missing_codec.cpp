// Must not compile: a payload type with no codec, checked the way the
// scheduler checks its types when a store is set.
#include <cronoq/codec.hpp>

struct PayloadWithoutCodec {
    int value;
};

static_assert(cronoq::require_codec<PayloadWithoutCodec>::value);
