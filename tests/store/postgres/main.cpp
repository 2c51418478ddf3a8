// test_store_postgres: the gtest suite against a real PostgreSQL server
// (CRONOQ_TEST_PG), or a child process a test re-executes (`--child <mode>`).
#include "pg_support.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace cronoq::test {
// The SQLite child modes are not part of this binary.
int child_main(int argc, char** argv) { return pg_child_main(argc, argv); }
}  // namespace cronoq::test

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--child") == 0) return cronoq::test::child_main(argc, argv);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
