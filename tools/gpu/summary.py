"""The GPU suite's last word: reads what run.sh left in RESULTS_DIR and prints one table (tests,
sanitizer errors, each benchmark's figure and ratio), also written as RESULTS_DIR/summary.json.
A stage that did not run, ran out of time, crashed, or skipped every case says so: a run that
proves nothing must not read like one that passed."""
import json
import os
import re
import sys

# (key in summary.json, run.sh's stage, its log)
TEST_LOGS = (("tests", "tests", "tests.log"), ("tests_two_logical_devices", "logical", "tests_logical.log"),
             ("tests_nccl", "logical", "tests_nccl.log"), ("tests_large", "large", "tests_large.log"))
# (key in summary.json, run.sh's stage, its log): runs of `tandem train`
TRAIN_LOGS = (("train_data_parallel", "train", "train_dp.log"), ("train_cnn_fp16", "train", "train_amp.log"))
ALL_STAGES = "gpu,tests,logical,large,train,memcheck,racecheck,bench"


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


STOPPED = "run.sh was stopped during this stage"  # what run.sh's stop() appends to the stage's log


def exit_status(log):
    found = re.findall(r"^exit status: (\d+)$", log, re.M)
    return int(found[-1]) if found else None


def problem(status):
    """What an exit status says beyond pass or fail, if anything."""
    if status in (124, 137):
        return "stopped at its time limit: the counts cover only the cases that ran"
    if status in (126, 127):
        return f"the program could not start (exit status {status}: not executable, or a library missing)"
    if status is not None and 128 < status < 160:
        return f"killed by signal {status - 128}"
    return None


COUNTS = r"tandem-tests: (\d+) passed, (\d+) failed, (\d+) skipped"


def added_counts(counts):
    """The counts of a log's processes added up: after a case that lost the GPU's context, run.sh
    runs the cases after it in a new process, whose counts follow in the same log."""
    return dict(zip(("passed", "failed", "skipped"), (sum(int(c[i]) for c in counts) for i in range(3))))


def lost_contexts(log):
    """A warning for each case after which the GPU's context was lost, saying whether run.sh ran the
    cases after it (it does not where the stage's time is up, or none is left)."""
    warnings = []
    for name in re.findall(r"^tandem-tests: lost the GPU context in: (.+)$", log, re.M):
        went_on = f'run.sh: the cases after "{name}" run on in a new process' in log
        warnings.append(f"the GPU context was lost in '{name}' (a kernel faulted); the cases after it "
                        + ("ran in a new process" if went_on else "did not run"))
    return warnings


def test_result(log):
    if not log:
        return None
    result = {"exit_status": exit_status(log)}
    counts = re.findall(COUNTS, log)
    if counts:
        result.update(added_counts(counts))
    result["failed_cases"] = re.findall(r"^tandem-tests: failed: (.+)$", log, re.M)
    durations = [(float(s), name) for s, name in re.findall(r"^(\d+\.\d+) s: (.+)$", log, re.M)]
    result["slowest"] = [f"{s:.2f} s: {name}" for s, name in sorted(durations, reverse=True)[:5]]
    warnings = []
    if not counts:
        warnings.append("no counts: the program ended before reporting them")
    elif result["passed"] + result["failed"] + result["skipped"] == 0:
        warnings.append("no case ran: the test spec matched none (a case renamed?)")
    elif result["passed"] == 0 and result["skipped"] > 0:
        warnings.append("every case skipped itself (no GPU seen? see gpu.txt)")
    if problem(result["exit_status"]):
        warnings.append(problem(result["exit_status"]))
    warnings += lost_contexts(log)
    if STOPPED in log:
        warnings.append("the run was stopped (TERM or INT) during this stage")
    result["warnings"] = warnings
    return result


def train_result(log):
    """A training run: its exit status, held-out accuracy and last epoch line, and what went wrong."""
    if not log:
        return None
    accuracy = re.findall(r"^held-out accuracy: ([\d.]+)%", log, re.M)
    epochs = re.findall(r"^epoch \d+/\d+: .*$", log, re.M)
    result = {"exit_status": exit_status(log), "held_out_accuracy": float(accuracy[-1]) if accuracy else None,
              "last_epoch": epochs[-1] if epochs else None}
    warnings = []
    if result["exit_status"] not in (0, None):
        said = [line for line in log.splitlines() if line.strip() and not line.startswith("exit status")]
        warnings.append(problem(result["exit_status"]) or f"exit status {result['exit_status']}: "
                        + (said[-1] if said else "see the log"))
    elif result["held_out_accuracy"] is None:
        warnings.append("no held-out accuracy: the run ended before it (see the log)")
    if any(re.search(r"\bloss -?(nan|inf)", line) for line in epochs):
        warnings.append("the loss is not finite")
    if STOPPED in log:
        warnings.append("the run was stopped (TERM or INT) during this stage")
    result["warnings"] = warnings
    return result


# compute-sanitizer starts each finding with "========= " and a word; the lines below it are
# indented further. These lines are its own headers and totals, not findings.
NOT_FINDINGS = re.compile(r"(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Target application "
                          r"returned|Error: process didn't terminate)")


def sanitizer(log):
    if not log:
        return {"ran": False, "why": "no log (stage not run)"}
    first_line = log.splitlines()[0] if log.splitlines() else ""
    if first_line.startswith(("compute-sanitizer is not installed", "compute-sanitizer could not run")):
        return {"ran": False, "why": first_line}
    status = exit_status(log)
    findings = [line for line in re.findall(r"^========= (\S.*)$", log, re.M) if not NOT_FINDINGS.search(line)]
    warnings = [f for f in findings if f.startswith("Warning")]
    errors = [f for f in findings if not f.startswith("Warning")]
    # The totals, where the run got to print them (the records shown stop at --print-limit).
    error_total = re.findall(r"ERROR SUMMARY: (\d+) error", log)
    race_total = re.findall(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)", log)
    error_count, warning_count = len(errors), len(warnings)
    # One total per process (after a lost GPU context the cases after it run in another).
    if error_total:
        error_count = sum(map(int, error_total))
    if race_total:
        error_count, warning_count = (sum(int(t[i]) for t in race_total) for i in range(2))
    result = {"ran": True, "exit_status": status, "errors": error_count, "warnings": warning_count,
              "first": (errors or warnings)[:3], "note": problem(status)}
    # No error found in the code: none counted, or no totals at all (the tool's own complaints are
    # what the lines above counted then).
    reported_none = error_count == 0 or not (error_total or race_total)
    if "Device not supported" in log and reported_none:
        result.update(ran=False, why="compute-sanitizer does not support this device or environment")
    if "terminated before first instrumented API call" in log and reported_none:
        result.update(ran=False, why="compute-sanitizer could not start the test program (see its log)")
    if STOPPED in log:
        result["note"] = "the run was stopped (TERM or INT) during this stage"
    counts = re.findall(COUNTS, log)
    if counts:
        result["tests"] = added_counts(counts)
    elif result["ran"] and not result["note"]:
        result["note"] = "the test program reported no counts: it did not finish"
    lost = lost_contexts(log)
    if lost:
        result["note"] = "; ".join(([result["note"]] if result["note"] else []) + lost)
    return result


def verdict_problems(summary):
    """What keeps the run from proving the GPU code: a failed or unfinished case, a training run that
    went wrong, a sanitizer error, no GPU or a missing library. Benchmarks' aims are not counted."""
    problems = []
    if summary.get("missing_libraries"):
        problems.append("libraries missing")
    if summary.get("no_gpu"):
        problems.append("no GPU seen")
    for key, _, _ in TEST_LOGS + TRAIN_LOGS:
        r = summary.get(key)
        if r is None:
            continue
        if r.get("failed"):
            problems.append(f"{key}: {r['failed']} failed")
        problems += [f"{key}: {w}" for w in r["warnings"]]
    for tool in ("memcheck", "racecheck"):
        s = summary[tool]
        if s.get("ran") and s["errors"]:
            problems.append(f"{tool}: {s['errors']} errors")
    return problems


def main():
    results = sys.argv[1]
    # Only this run's stages: the folder may hold logs of an earlier run's other stages.
    ran = set((read(os.path.join(results, "stages.txt")).strip() or ALL_STAGES).split(","))

    def log_of(stage, name):
        return read(os.path.join(results, name)) if stage in ran else ""

    gpu = log_of("gpu", "gpu.txt")
    summary = {"gpu": gpu.strip().splitlines()[:1], "test_seed": read(os.path.join(results, "seed.txt")).strip()}
    missing = read(os.path.join(results, "missing_libraries.txt")).strip()
    if missing:
        summary["missing_libraries"] = missing
    no_device = re.search(r"^cuda\s+0 devices.*$", gpu, re.M)
    if no_device:
        summary["no_gpu"] = no_device.group(0)
    summary["stages"] = sorted(ran)
    for key, stage, name in TEST_LOGS:
        summary[key] = test_result(log_of(stage, name))
    for key, stage, name in TRAIN_LOGS:
        summary[key] = train_result(log_of(stage, name))
    for tool in ("memcheck", "racecheck"):
        summary[tool] = sanitizer(log_of(tool, f"sanitizer_{tool}.log"))
    summary["benchmarks"] = {}
    if "bench" in ran:
        try:
            with open(os.path.join(results, "bench.json")) as f:
                bench = json.load(f)
            summary["torch"] = bench.get("torch")
            summary["benchmarks"] = bench.get("results", {})
            summary["benchmark_errors"] = {f"{side}: {name}": error
                                           for side, errors in (bench.get("errors") or {}).items()
                                           for name, error in errors.items()}
        except (OSError, ValueError):
            pass
    summary["bench_exit_status"] = exit_status(log_of("bench", "bench.log"))
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)

    print(f"GPU: {summary['gpu'][0] if summary['gpu'] else '?'}")
    print(f"test seed: {summary['test_seed'] or '?'} (TANDEM_TEST_SEED repeats it)")
    if missing:
        print(f"WARNING: {missing}")
    if no_device:
        print(f"WARNING: tandem sees no GPU: {no_device.group(0)}")
    for key, _, _ in TEST_LOGS:
        r = summary[key]
        if r is None:
            print(f"{key}: not run")
            continue
        counts = f"{r['passed']} passed, {r['failed']} failed, {r['skipped']} skipped" if "passed" in r else "no result"
        print(f"{key}: {counts}" + "".join(f"; WARNING: {w}" for w in r["warnings"]))
        for name in r["failed_cases"]:
            print(f"    failed: {name}")
        for line in r["slowest"][:3]:
            print(f"    slowest: {line}")
    for key, _, _ in TRAIN_LOGS:
        r = summary[key]
        if r is None:
            print(f"{key}: not run")
            continue
        accuracy = f"held-out accuracy {r['held_out_accuracy']}%" if r["held_out_accuracy"] is not None else "no result"
        print(f"{key}: {accuracy}" + "".join(f"; WARNING: {w}" for w in r["warnings"]))
        if r["last_epoch"]:
            print(f"    {r['last_epoch']}")
    for tool in ("memcheck", "racecheck"):
        s = summary[tool]
        if not s.get("ran"):
            print(f"{tool}: not run ({s.get('why')})")
            continue
        line = f"{tool}: {s['errors']} errors, {s['warnings']} warnings"
        if s.get("tests"):
            t = s["tests"]
            line += f" (cases: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped)"
        if s["note"]:
            line += f"; {s['note']}"
        print(line)
        for f in s["first"]:
            print(f"    {f}")
    print(f"\n{'benchmark':<28} {'tandem':>11} {'PyTorch':>11} {'ratio':>6}  {'of copy':>7}  verdict")
    for name, r in sorted(summary["benchmarks"].items()):
        t, p = r.get("tandem_s"), r.get("torch_s")
        ratio = f"{t / p:.2f}" if t and p else "-"
        frac = r.get("fraction_of_copy_bandwidth")
        print(f"{name:<28} {t * 1e3 if t else 0:>9.3f}ms {p * 1e3 if p else 0:>9.3f}ms {ratio:>6}  "
              f"{f'{100 * frac:.0f}%' if frac else '-':>7}  {r.get('verdict') or '-'}")
    if problem(summary["bench_exit_status"]):
        print(f"benchmarks: WARNING: {problem(summary['bench_exit_status'])}")
    for name, error in summary.get("benchmark_errors", {}).items():
        print(f"benchmarks: WARNING: {name} failed: {error}")
    if "bench" in ran and not summary["benchmarks"]:
        print("benchmarks: WARNING: no results (no GPU seen, or the run ended first: see bench.log)")
    problems = verdict_problems(summary)
    print(f"\nverdict: {'passed' if not problems else 'NOT passed: ' + '; '.join(problems)}")
    print(f"written to {os.path.join(results, 'summary.json')}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
