"""The GPU suite's last word: reads what run.sh left in RESULTS_DIR and prints one table (tests,
sanitizer errors, each benchmark's figure and ratio), also written as RESULTS_DIR/summary.json."""
import json
import os
import re
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def test_counts(log):
    m = re.findall(r"tandem-tests: (\d+) passed, (\d+) failed, (\d+) skipped", log)
    if not m:
        return None
    p, f, s = map(int, m[-1])
    return {"passed": p, "failed": f, "skipped": s}


def sanitizer(log):
    if not log:
        return {"ran": False}
    if "not found" in log and "ERROR SUMMARY" not in log:
        return {"ran": False, "why": "compute-sanitizer not found"}
    errors = [int(n) for n in re.findall(r"(?:ERROR|RACECHECK) SUMMARY: (\d+)", log)]
    status = re.findall(r"exit status: (\d+)", log)
    timed_out = bool(status) and status[-1] == "124"
    result = {"ran": True, "errors": sum(errors) if errors else None, "timed_out": timed_out}
    if not errors and "Device not supported" in log:
        result.update(ran=False, why="the device is not supported by compute-sanitizer here")
    return result


def main():
    results = sys.argv[1]
    summary = {
        "gpu": read(os.path.join(results, "gpu.txt")).strip().splitlines()[:1],
        "tests": test_counts(read(os.path.join(results, "tests.log"))),
        "tests_two_logical_devices": test_counts(read(os.path.join(results, "tests_logical.log"))),
        "memcheck": sanitizer(read(os.path.join(results, "sanitizer_memcheck.log"))),
        "racecheck": sanitizer(read(os.path.join(results, "sanitizer_racecheck.log"))),
        "benchmarks": {},
    }
    try:
        with open(os.path.join(results, "bench.json")) as f:
            bench = json.load(f)
        summary["torch"] = bench.get("torch")
        summary["benchmarks"] = bench.get("results", {})
    except (OSError, ValueError):
        pass
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)

    print(f"GPU: {summary['gpu'][0] if summary['gpu'] else '?'}")
    for key in ("tests", "tests_two_logical_devices"):
        c = summary[key]
        print(f"{key}: " + (f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped" if c else "no result"))
    for key in ("memcheck", "racecheck"):
        s = summary[key]
        if not s.get("ran"):
            print(f"{key}: not run ({s.get('why', 'no log')})")
        else:
            errors = "?" if s["errors"] is None else s["errors"]
            print(f"{key}: {errors} errors" + (" (timed out: partial)" if s["timed_out"] else ""))
    print(f"\n{'benchmark':<28} {'tandem':>11} {'PyTorch':>11} {'ratio':>6}  {'of copy':>7}  verdict")
    for name, r in sorted(summary["benchmarks"].items()):
        t, p = r.get("tandem_s"), r.get("torch_s")
        ratio = f"{t / p:.2f}" if t and p else "-"
        frac = r.get("fraction_of_copy_bandwidth")
        print(f"{name:<28} {t * 1e3 if t else 0:>9.3f}ms {p * 1e3 if p else 0:>9.3f}ms {ratio:>6}  "
              f"{f'{100 * frac:.0f}%' if frac else '-':>7}  {r.get('verdict') or '-'}")
    print(f"\nwritten to {os.path.join(results, 'summary.json')}")


if __name__ == "__main__":
    main()
