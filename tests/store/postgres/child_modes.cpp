// The modes a child process of test_store_postgres runs in
// (`test_store_postgres --child <mode> key=value...`): `leader`
// (conformance/leader_process.hpp) and `client`
// (conformance/client_process.hpp) on the schema `schema=` of the test
// server.
#include "conformance/client_process.hpp"
#include "conformance/leader_process.hpp"
#include "pg_support.hpp"

#include <cstdio>

namespace cronoq::test {

int child_main(int argc, char** argv) {
    const std::string mode = argc > 2 ? argv[2] : "";
    if (mode == "leader") {
        const ChildArgs args = parse_child_args(argc, argv);
        return leader_child(args, [&](std::chrono::milliseconds lease) {
            PostgresStoreConfig config;
            config.schema = args.at("schema");
            config.leader_lease = lease;
            return PostgresStore::connect(pg_conninfo(), config);
        });
    }
    if (mode == "client") {
        const ChildArgs args = parse_child_args(argc, argv);
        return client_child(args, [&] {
            PostgresStoreConfig config;
            config.schema = args.at("schema");
            return PostgresStore::connect(pg_conninfo(), config);
        });
    }
    std::fprintf(stderr, "unknown child mode %s\n", mode.c_str());
    return 2;
}

}  // namespace cronoq::test
