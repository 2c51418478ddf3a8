#!/usr/bin/env python3
"""Runs benchmark binaries in alternating rounds and compares them.

    compare_runs.py [--filter RE] [--rounds N] [--repetitions K] [--min-time S]
                    [--cpu C] [--ratio NUM:DEN ...] NAME=BINARY [NAME=BINARY ...]

Each round runs every binary once, in turn, pinned to one CPU when
`taskset` is there, with K repetitions of S seconds each. A shared
machine's load moves every figure by several per cent from one minute to
the next, so a figure is only compared with figures taken in the same
rounds (docs/PERFORMANCE.md, "Method"). It prints, per binary, the
median and the least time of each benchmark over every repetition, its
median against the first binary's, and for each --ratio the median over
the rounds of NUM's items per second over DEN's in the same run (e.g.
BM_EngineDispatchCompleteFair/100000:BM_EngineDispatchComplete/100000),
with the same ratio of the least times over every run beside it: work
that a neighbour slows down only ever takes longer, so the least times
are the figures least moved by one. On a virtual machine one CPU can run
at half speed for minutes while the other does not (its host sibling
busy): compare --cpu 0 and --cpu 1 before trusting a run.
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys


def run(binary, args, cpu):
    cmd = [binary, f"--benchmark_filter={args.filter}", f"--benchmark_min_time={args.min_time}",
           f"--benchmark_repetitions={args.repetitions}", "--benchmark_format=json"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    if any(b.get("error_occurred") for b in rows):
        sys.exit(f"{binary}: " + "; ".join(b.get("error_message", "") for b in rows if b.get("error_occurred")))
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", default="^BM_EngineDispatchComplete(Fair)?/100000$")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--min-time", default="0.2")
    p.add_argument("--cpu", type=int, default=1, help="CPU to pin to (-1: none)")
    p.add_argument("--ratio", action="append", default=[], metavar="NUM:DEN")
    p.add_argument("binaries", nargs="+", metavar="NAME=BINARY")
    args = p.parse_args()
    named = [b.split("=", 1) for b in args.binaries]
    if any(len(n) != 2 for n in named):
        p.error("binaries are given as NAME=BINARY")
    cpu = args.cpu if args.cpu >= 0 and shutil.which("taskset") else None

    times = {name: {} for name, _ in named}    # name -> benchmark -> [ns]
    ratios = {name: {} for name, _ in named}   # name -> ratio -> [per round]
    for _ in range(args.rounds):
        for name, binary in named:
            rows = run(binary, args, cpu)
            rate = {}
            for b in rows:
                times[name].setdefault(b["run_name"], []).append(b["real_time"])
                rate.setdefault(b["run_name"], []).append(b.get("items_per_second", 0.0))
            for r in args.ratio:
                num, den = r.split(":", 1)
                if num in rate and den in rate and statistics.median(rate[den]) > 0:
                    ratios[name].setdefault(r, []).append(statistics.median(rate[num]) / statistics.median(rate[den]))

    first = named[0][0]
    for name, _ in named:
        print(name)
        for bench, ns in sorted(times[name].items()):
            base = times[first].get(bench)
            against = f", time {statistics.median(ns) / statistics.median(base):.3f}x of {first}'s" if base else ""
            print(f"  {bench}: median {statistics.median(ns):.1f}, least {min(ns):.1f} (ns, {len(ns)} runs){against}")
        for r, values in ratios[name].items():
            num, den = r.split(":", 1)
            print(f"  {r}: median {statistics.median(values):.3f}x over {len(values)} rounds"
                  f" (least {min(values):.3f}x, most {max(values):.3f}x);"
                  f" of the least times {min(times[name][den]) / min(times[name][num]):.3f}x")


if __name__ == "__main__":
    main()
