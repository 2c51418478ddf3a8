// cronoq-worker-proto: prints the worker protocol's .proto (cronoq.v1,
// protocol_version 3), from which a worker in any language generates its
// stubs:  cronoq-worker-proto > cronoq/v1/workers.proto
// (or `cronoq-worker-proto cronoq/v1/workers.proto` to write the file).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace cronoq::detail {
extern const std::string_view workers_proto_text;
}

int main(int argc, char** argv) {
    if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
        std::puts("usage: cronoq-worker-proto [FILE]\n"
                  "Prints (or writes to FILE) cronoq/v1/workers.proto, the remote-worker protocol (service cronoq.v1.Workers,\n"
                  "rpc Work, protocol_version 3). Save it as cronoq/v1/workers.proto and generate stubs\n"
                  "with your language's protobuf and gRPC tooling.");
        return 0;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        std::fprintf(stderr, "cronoq-worker-proto: unexpected argument %s (try --help)\n", argv[argc - 1]);
        return 2;
    }
    std::FILE* out = argc == 2 ? std::fopen(argv[1], "wb") : stdout;
    if (!out) {
        std::fprintf(stderr, "cronoq-worker-proto: cannot write %s: %s\n", argv[1], std::strerror(errno));
        return 1;
    }
    const auto& text = cronoq::detail::workers_proto_text;
    const bool written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    const bool closed = out == stdout ? std::fflush(out) == 0 : std::fclose(out) == 0;
    return written && closed ? 0 : 1;
}
