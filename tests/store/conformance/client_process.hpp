#pragma once
// A client of a store in a child process (`<test binary> --child client
// <site args> op=<op> ...`), dispatched by each test binary with its own way
// of opening a store. It reports on stdout, one line per event:
//   S <round> <id> <0|1>   op=race: round n submitted key "race-<n>" and got
//                          task <id>, created (1) or resolved (0)
//   D                      done (op=end: its commit is in the store)
//   F <kind> <message>     the store failed
// op=race: `rounds=` submissions, from `start=` (ns since the Unix epoch),
// so that the children of one test race. op=end: leads the store and
// commits one task inserted `Succeeded` (id `id=`), as a leader ending a
// task does.
#include "leader_process.hpp"

#include <cronoq/store/store.hpp>

#include <functional>
#include <memory>

namespace cronoq::test {

int client_child(const ChildArgs& args, const std::function<std::shared_ptr<Store>()>& open);

}  // namespace cronoq::test
