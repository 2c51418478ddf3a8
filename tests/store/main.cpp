// test_store: the gtest suite, or a child process that a test re-executes
// (`--child <mode>`; posix_spawn, never fork: NOTES.md).
#include "store_support.hpp"

#include <gtest/gtest.h>

#include <cstring>

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return cronoq::test::child_main(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
