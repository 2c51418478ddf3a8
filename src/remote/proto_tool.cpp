// cronoq-worker-proto: prints the worker protocol's .proto (cronoq.v1,
// protocol_version 3), from which a worker in any language generates its
// stubs:  cronoq-worker-proto > cronoq/v1/workers.proto
#include <cstdio>
#include <cstring>
#include <string_view>

namespace cronoq::detail {
extern const std::string_view workers_proto_text;
}

int main(int argc, char** argv) {
    if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::puts("usage: cronoq-worker-proto\n"
                  "Prints cronoq/v1/workers.proto, the remote-worker protocol (service cronoq.v1.Workers,\n"
                  "rpc Work, protocol_version 3). Save it as cronoq/v1/workers.proto and generate stubs\n"
                  "with your language's protobuf and gRPC tooling.");
        return 0;
    }
    if (argc > 1) {
        std::fprintf(stderr, "cronoq-worker-proto: unknown argument %s (try --help)\n", argv[1]);
        return 2;
    }
    const auto& text = cronoq::detail::workers_proto_text;
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0 ? 0 : 1;
}
