"""Cold start of the CLI: wall time to the answer and peak memory of ``python -m corrector TEXT``, each run a fresh
process (the bundle's files stay in the page cache between runs, as they do for a service restarted on one host).

    python benchmarks/cold_start.py                       # 7 runs of python -m corrector 我门, after 1 warm-up
    python benchmarks/cold_start.py --runs 11 --text 今天天汽很好 -- --device cpu

Prints each run (seconds to the first line on stdout, seconds to exit, CPU seconds (user + system), peak RSS) and
the medians, with the machine's core count and load average, which the times depend on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, float, str]:
    """(seconds to the first stdout line, seconds to exit, CPU seconds, peak RSS in MB, the first line)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    t_answer = time.perf_counter() - t0
    rest, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    t_exit = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode(errors='replace')[-2000:]}")
    del rest
    rss_mb = usage.ru_maxrss / 1024 if sys.platform != "darwin" else usage.ru_maxrss / 2**20
    cpu = usage.ru_utime + usage.ru_stime
    return t_answer, t_exit, cpu, rss_mb, first.decode("utf-8", errors="replace").rstrip("\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--text", default="我门", help="what to correct (default: 我门)")
    ap.add_argument("--runs", type=int, default=7, help="measured runs (default 7)")
    ap.add_argument("--warmup", type=int, default=1, help="runs first, not measured (default 1: the page cache)")
    ap.add_argument("cli_args", nargs="*", help="more arguments for python -m corrector (after --)")
    args = ap.parse_args()
    cmd = [sys.executable, "-m", "corrector", *args.cli_args, args.text]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(args.warmup):
        one_run(cmd, env)
    print(f"command: {' '.join(cmd[1:])}")
    print(f"cores: {os.cpu_count()}  load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    for i in range(args.runs):
        answer, done, cpu, rss, line = one_run(cmd, env)
        rows.append((answer, done, cpu, rss))
        print(f"run {i + 1}: answer {answer:.3f} s  exit {done:.3f} s  CPU {cpu:.3f} s  peak RSS {rss:.0f} MB  -> {line}")
    med = [statistics.median(col) for col in zip(*rows)]
    print(f"median of {args.runs}: answer {med[0]:.3f} s  exit {med[1]:.3f} s  CPU {med[2]:.3f} s  peak RSS {med[3]:.0f} MB")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
