#include "client_process.hpp"

#include <cronoq/store/client_access.hpp>
#include <cronoq/store/journal.hpp>

#include <thread>

namespace cronoq::test {

using namespace std::chrono;

namespace {

int race(Store& store, const ChildArgs& args) {
    const int rounds = std::stoi(args.at("rounds"));
    std::this_thread::sleep_until(system_clock::time_point(nanoseconds(std::stoll(args.at("start")))));
    for (int round = 0; round < rounds; ++round) {
        const auto got = store.client_access().submit({task_row(0, "race-" + std::to_string(round))});
        report_line("S " + std::to_string(round) + " " + std::to_string(got.at(0).id.value) + " " +
                    (got.at(0).created ? "1" : "0"));
    }
    report_line("D");
    return 0;
}

int end(Store& store, const ChildArgs& args) {
    Reports reports;
    store.journal().lead(reports.handlers());
    if (!reports.wait_leading()) return 3;
    store::TaskRow row = task_row(std::stoull(args.at("id")));
    row.status = TaskStatus::Succeeded;
    if (!reports.wait_committed(store.journal().enqueue(store::Batch{{store::TaskInserted{row}}}))) return 4;
    report_line("D");
    store.journal().release();
    reports.wait_lost();
    return 0;
}

}  // namespace

int client_child(const ChildArgs& args, const std::function<std::shared_ptr<Store>()>& open) {
    try {
        const auto store = open();
        const std::string op = args.at("op");
        if (op == "race") return race(*store, args);
        if (op == "end") return end(*store, args);
        report_line("F unknown op " + op);
        return 2;
    } catch (const StoreError& error) {
        report_line("F " + std::string(to_string(error.kind())) + " " + one_line(error.what()));
        return 2;
    }
}

}  // namespace cronoq::test
