// test_remote: the gtest suite, or a worker process that a test re-executes
// (`--child worker ...`; posix_spawn, never fork: the tests run gRPC's threads).
#include "remote_support.hpp"

#include <gtest/gtest.h>

#include <cstring>

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return cronoq::test::child_main(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
