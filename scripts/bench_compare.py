"""The figures of scripts/bench-compare: one line per run as it ends, and the summary.

  bench_compare.py line MODE RESULT.json PREFIX
  bench_compare.py summary MODE RUNS_DIR [json] LIVELINE...

RESULT.json is what `liveline-bench MODE --json` printed; RUNS_DIR holds one
SEQUENCE-ROUND-INDEX.json per run, SEQUENCE its place in the order the runs went in and INDEX
the build's position among the LIVELINEs. scripts/bench-compare alone decides that order.
"""

import json
import os
import sys

LABELS = "ABCDEFGH"
# The worker processes each mode meters, the first being the one compared between builds.
WORKERS = {"sender": ["sender-1"], "translator": ["translator-1"], "e2e": ["translator-1", "sender-1"]}


def figures(mode, result):
    """The figures of one run that the comparison reads."""
    processes = {p["name"]: p for p in result["processes"]}
    missing = [name for name in WORKERS[mode] + ["broker"] if name not in processes]
    if missing:
        sys.exit(f"bench-compare: the {mode} benchmark metered no {', '.join(missing)}")
    run = {
        "rate": result["pushesPerSecond"] if mode == "sender" else result["eventsPerSecond"],
        "workers": {
            name: {"cpuMicroseconds": processes[name]["microsecondsPerEvent"], "peakRSSMiB": processes[name]["peakRSSMiB"]}
            for name in WORKERS[mode]
        },
        "brokerMicroseconds": processes["broker"]["microsecondsPerEvent"],
    }
    if mode == "e2e":
        run["latencyMilliseconds"] = {"p50": result["p50"], "p99": result["p99"], "p99.9": result["p999"]}
    return run


def describe(mode, run):
    unit = "pushes/s" if mode == "sender" else "events/s"
    parts = [f"{run['rate']:,.0f} {unit}"]
    for name, worker in run["workers"].items():
        parts.append(f"{name} {worker['cpuMicroseconds']:.1f} µs, peak {worker['peakRSSMiB']:.1f} MiB")
    parts.append(f"broker {run['brokerMicroseconds']:.1f} µs")
    if "latencyMilliseconds" in run:
        latency = run["latencyMilliseconds"]
        parts.append(f"p50 {latency['p50']:.1f} ms, p99 {latency['p99']:.1f} ms, p99.9 {latency['p99.9']:.1f} ms")
    return "; ".join(parts)


def spread(values):
    return {"min": min(values), "max": max(values), "mean": sum(values) / len(values)}


def main(arguments):
    command = arguments[0]
    if command == "line":
        mode, path, prefix = arguments[1:4]
        with open(path) as file:
            print(f"bench-compare: {prefix}: {describe(mode, figures(mode, json.load(file)))}")
        return
    mode, directory, as_json = arguments[1], arguments[2], arguments[3] == "json"
    builds = arguments[4:]
    runs = []
    for name in sorted(name for name in os.listdir(directory) if name.endswith(".json")):
        _, round_number, index = name.removesuffix(".json").split("-")
        with open(os.path.join(directory, name)) as file:
            run = figures(mode, json.load(file))
        runs.append({"round": int(round_number), "build": LABELS[int(index)], **run})
    rounds = max(run["round"] for run in runs)

    compared = WORKERS[mode][0]
    # A round's pair: a build's run and the first build's run of the same round.
    cpu = {(run["round"], run["build"]): run["workers"][compared]["cpuMicroseconds"] for run in runs}
    summary = []
    for index, path in enumerate(builds):
        own = [run for run in runs if run["build"] == LABELS[index]]
        entry = {
            "build": LABELS[index],
            "liveline": path,
            "rate": spread([run["rate"] for run in own]),
            "workers": {
                name: {
                    "cpuMicroseconds": spread([run["workers"][name]["cpuMicroseconds"] for run in own]),
                    "peakRSSMiB": spread([run["workers"][name]["peakRSSMiB"] for run in own]),
                }
                for name in WORKERS[mode]
            },
            "brokerMicroseconds": spread([run["brokerMicroseconds"] for run in own]),
        }
        if index > 0:
            entry["roundsWithLessCPUThanA"] = sum(
                1 for r in range(1, rounds + 1) if cpu[(r, LABELS[index])] < cpu[(r, "A")]
            )
        summary.append(entry)

    if as_json:
        print(json.dumps({"mode": mode, "rounds": rounds, "compared": compared, "runs": runs, "builds": summary}, indent=2))
        return
    unit = "pushes/s" if mode == "sender" else "events/s"
    print(f"bench-compare: {mode}, {rounds} round(s), every run in order")
    for run in runs:
        print(f"  round {run['round']} {run['build']}: {describe(mode, run)}")
    for entry in summary:
        print(f"{entry['build']}: {entry['liveline']}")
        rate = entry["rate"]
        print(f"  rate {rate['min']:,.0f}–{rate['max']:,.0f} {unit} (mean {rate['mean']:,.0f})")
        for name, worker in entry["workers"].items():
            cpu, rss = worker["cpuMicroseconds"], worker["peakRSSMiB"]
            print(f"  {name}: {cpu['min']:.1f}–{cpu['max']:.1f} µs (mean {cpu['mean']:.1f}), peak RSS {rss['min']:.1f}–{rss['max']:.1f} MiB")
        broker = entry["brokerMicroseconds"]
        print(f"  broker: {broker['min']:.1f}–{broker['max']:.1f} µs (mean {broker['mean']:.1f})")
        if "roundsWithLessCPUThanA" in entry:
            print(f"  {compared} spent less CPU than A's in {entry['roundsWithLessCPUThanA']} of {rounds} round(s)")


if __name__ == "__main__":
    main(sys.argv[1:])
