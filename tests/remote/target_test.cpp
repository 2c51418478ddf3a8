// RemoteWorkerOptions::target: its scheme decides TLS, and a scheme that
// contradicts the tls settings is an error, never a plaintext connection.
#include "client_stream.hpp"

#include <cronoq/remote/remote_worker_error.hpp>

#include <gtest/gtest.h>

namespace cronoq::detail::target_test {
namespace {

TEST(Target, TheSchemeIsStrippedAndDecidesTls) {
    EXPECT_EQ(parse_target("127.0.0.1:7070", false).address, "127.0.0.1:7070");
    EXPECT_FALSE(parse_target("127.0.0.1:7070", false).tls);
    EXPECT_TRUE(parse_target("127.0.0.1:7070", true).tls);  // no scheme: tls decides
    EXPECT_EQ(parse_target("http://cronoq:7070", false).address, "cronoq:7070");
    EXPECT_FALSE(parse_target("http://cronoq:7070", false).tls);
    EXPECT_EQ(parse_target("https://cronoq:7070/", true).address, "cronoq:7070");
    EXPECT_TRUE(parse_target("https://cronoq:7070", true).tls);
    // gRPC's own target forms pass through.
    EXPECT_EQ(parse_target("dns:///cronoq.internal:7070", false).address, "dns:///cronoq.internal:7070");
    EXPECT_EQ(parse_target("ipv4:10.0.0.1:7070,10.0.0.2:7070", false).address, "ipv4:10.0.0.1:7070,10.0.0.2:7070");
}

TEST(Target, ASchemeAgainstTheTlsSettingsIsInvalidArgument) {
    for (const auto& [target, tls] : {std::pair{"http://cronoq:7070", true}, std::pair{"https://cronoq:7070", false},
                                      std::pair{"https://", true}, std::pair{"", false}}) {
        try {
            parse_target(target, tls);
            ADD_FAILURE() << target << " with tls=" << tls << " was accepted";
        } catch (const RemoteWorkerError& e) {
            EXPECT_EQ(e.code(), RemoteWorkerError::Code::InvalidArgument) << target;
        }
    }
}

}  // namespace
}  // namespace cronoq::detail::target_test
