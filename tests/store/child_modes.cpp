// The modes a child process of test_store runs in (`test_store --child
// <mode> key=value...`): `leader` (conformance/leader_process.hpp) on a
// SQLite file, with an optional file-size limit, `client`
// (conformance/client_process.hpp), and `open`, which reports
//   R                       ready (with `go=`): waiting for the parent's go
//   O / F <kind> <message>  the store opened / failed to open
#include "conformance/client_process.hpp"
#include "conformance/leader_process.hpp"

#include <cronoq/store/sqlite_store.hpp>

#include <csignal>
#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>

namespace cronoq::test {

namespace {

using namespace std::chrono;

/// `file=`: the store; `fsize=`: RLIMIT_FSIZE in bytes.
int leader_mode(const ChildArgs& args) {
    if (args.count("fsize")) {
        // A small "disk": writes past the limit fail (EFBIG) instead of
        // killing the process.
        std::signal(SIGXFSZ, SIG_IGN);
        const rlim_t limit = std::stoull(args.at("fsize"));
        const rlimit r{limit, limit};
        ::setrlimit(RLIMIT_FSIZE, &r);
    }
    return leader_child(args, [&](milliseconds lease) {
        return SqliteStore::open(args.at("file"), SqliteStoreConfig{Durability::Full, lease, hours(24)});
    });
}

/// Tries to open `file` (as user `uid` when given and running as root, so
/// that directory permissions apply) and reports the outcome. With `go=<r>,<w>`
/// (an inherited pipe's ends) it first closes `w` and waits for the end of
/// `r`: the parent's closing its write end starts every child at once.
int open_mode(const ChildArgs& args) {
    if (args.count("uid") && ::geteuid() == 0) {
        const auto id = static_cast<uid_t>(std::stoul(args.at("uid")));
        if (::setgid(id) != 0 || ::setuid(id) != 0) {
            report_line("F setuid failed");
            return 2;
        }
    }
    if (args.count("go")) {
        const std::string& go = args.at("go");
        const std::size_t comma = go.find(',');
        const int read_end = std::stoi(go.substr(0, comma));
        ::close(std::stoi(go.substr(comma + 1)));
        report_line("R");
        char byte = 0;
        while (::read(read_end, &byte, 1) > 0) {
        }
    }
    try {
        SqliteStore::open(args.at("file"));
        report_line("O");
        return 0;
    } catch (const StoreError& error) {
        report_line("F " + std::string(to_string(error.kind())) + " " + one_line(error.what()));
        return 1;
    }
}

}  // namespace

int child_main(int argc, char** argv) {
    const std::string mode = argc > 2 ? argv[2] : "";
    if (mode == "leader") return leader_mode(parse_child_args(argc, argv));
    if (mode == "open") return open_mode(parse_child_args(argc, argv));
    if (mode == "client") {
        const ChildArgs args = parse_child_args(argc, argv);
        return client_child(args, [&] { return SqliteStore::open(args.at("file")); });
    }
    std::fprintf(stderr, "unknown child mode %s\n", mode.c_str());
    return 2;
}

}  // namespace cronoq::test
