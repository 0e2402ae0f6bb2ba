"""Speed of two checkouts side by side, on the same cores, in alternating rounds.

    python benchmarks/compare_speed.py --base c9deb07 --data ../shared/data/csc/sighan15_test.tsv [--rounds 3]

``--base`` and ``--new`` are git revisions of this repository (checked out into temporary worktrees) or folders
of a checkout; ``--new`` defaults to this working tree. Each round starts one fresh process per side, in turns
(base, new, base, new, ...), so that whatever else the machine does falls on both; each process loads its own
checkout's code and default bundle (``--bundle DIR`` gives both the same one) and measures what
``benchmarks/speed.py`` does, the best of ``--passes`` passes: sentences/s in calls of ``--batch-size`` texts, in
one call for everything, and one text at a time (with p50/p99 latency, each text's fastest pass). Prints every round and the median of each side; timings of one machine
only compare with timings taken beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, sys, time
from pathlib import Path
import numpy as np
from corrector import Corrector
data, bundle, batch, limit, passes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
texts = [l.split("\t")[0] for l in Path(data).read_text(encoding="utf-8").splitlines() if l.strip()][:limit or None]
fix = Corrector.load(Path(bundle) if bundle else None, batch_size=batch)
fix.correct_batch(texts[:batch])
calls = whole = 0.0
for _ in range(passes):  # the best pass: other work on the machine only ever slows one down
    t0 = time.perf_counter()
    for s in range(0, len(texts), batch):
        fix.correct_batch(texts[s : s + batch])
    calls = max(calls, len(texts) / (time.perf_counter() - t0))
    t0 = time.perf_counter()
    fix.correct_batch(texts)
    whole = max(whole, len(texts) / (time.perf_counter() - t0))
lat = [float("inf")] * len(texts)
for _ in range(passes):
    for i, t in enumerate(texts):
        t1 = time.perf_counter()
        fix.correct(t)
        lat[i] = min(lat[i], time.perf_counter() - t1)
ms = np.array(lat) * 1000
print(json.dumps({"calls": calls, "whole": whole, "single": len(texts) / sum(lat),
                  "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99))}))
"""
KEYS = ("calls", "whole", "single", "p50", "p99")


def checkout(rev: str, tmp: Path) -> Path:
    """A folder of the checkout: ``rev`` itself when it is one, else a worktree of that revision."""
    if Path(rev).is_dir():
        return Path(rev).resolve()
    out = tmp / rev.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(out), rev], check=True,
                   capture_output=True)
    return out


def measure(root: Path, args: argparse.Namespace) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(args.data.resolve()),
                           str(args.bundle.resolve()) if args.bundle else "", str(args.batch_size), str(args.limit),
                           str(args.passes)],
                          capture_output=True, text=True, cwd=tempfile.gettempdir(),
                          env={**os.environ, "PYTHONPATH": str(root)})
    if proc.returncode != 0:
        sys.exit(f"error: the checkout at {root} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="git revision or checkout folder to compare against")
    ap.add_argument("--new", default=str(REPO), help="git revision or checkout folder (default: this working tree)")
    ap.add_argument("--data", type=Path, required=True, help="TSV whose first column is the texts")
    ap.add_argument("--bundle", type=Path, default=None, help="one bundle for both sides (default: each its own)")
    ap.add_argument("--rounds", type=int, default=3, help="processes per side, in turns")
    ap.add_argument("--passes", type=int, default=2, help="passes over the texts in each process; the best counts")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--limit", type=int, default=0, help="first N texts only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        sides = {"base": checkout(args.base, Path(d)), "new": checkout(args.new, Path(d))}
        try:
            runs: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
            print(f"| round | side | calls of {args.batch_size} (sent/s) | one call | one at a time | p50 ms | p99 ms |")
            print("|---:|---|---:|---:|---:|---:|---:|")
            for r in range(args.rounds):
                for side, root in sides.items():
                    m = measure(root, args)
                    runs[side].append(m)
                    print(f"| {r + 1} | {side} | " + " | ".join(f"{m[k]:.1f}" for k in KEYS) + " |", flush=True)
            for side in sides:
                med = {k: statistics.median(m[k] for m in runs[side]) for k in KEYS}
                print(f"| median | {side} ({args.base if side == 'base' else args.new}) | "
                      + " | ".join(f"{med[k]:.1f}" for k in KEYS) + " |")
        finally:
            for root in sides.values():
                if Path(d) in root.parents:
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(root)],
                                   capture_output=True)


if __name__ == "__main__":
    main()
