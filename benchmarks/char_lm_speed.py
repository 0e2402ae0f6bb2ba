"""Queries per second of ``CharLM.logprob`` on one thread, on realistic windows.

    python benchmarks/char_lm_speed.py --lm DIR [--batch 1500 --batch 48000] [--seconds 3]

Windows come from the sentences of ../shared/data/csc/sighan15_test.tsv (source side) when present,
else from random ids: every position of every sentence, plus each position with its character replaced by
a random frequent one (as a decoder scoring candidates does).  Run with OMP_NUM_THREADS=1 (numpy's
element-wise work is single-threaded anyway).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm import CharLM, CharLMBase


def windows(lm: CharLMBase, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    path = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "csc" / "sighan15_test.tsv"
    sents: list[str] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) >= 2:
                sents.append(parts[0])
    if not sents:
        sents = ["".join(chr(0x4E00 + int(x)) for x in rng.integers(0, 3000, size=30)) for _ in range(200)]
    out = []
    total = 0
    while total < n:
        for s in sents:
            ids = lm.encode_sentence(s)
            w = lm.windows(ids)
            out.append(w)
            sub = w.copy()
            # candidate substitution at a random position inside each window's history/target
            col = rng.integers(0, lm.order, size=sub.shape[0])
            rows = np.arange(sub.shape[0])
            keep = sub[rows, col] > 2
            sub[rows[keep], col[keep]] = rng.integers(3, 3003, size=int(keep.sum()))
            out.append(sub)
            total += 2 * w.shape[0]
            if total >= n:
                break
    return np.concatenate(out)[:n]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lm", type=Path, required=True)
    ap.add_argument("--batch", type=int, action="append")
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    lm = CharLM.load(args.lm)
    batches = args.batch or [1500, 48000]
    pool = windows(lm, max(batches) * 4)
    lm.logprob(pool[: max(batches)])  # warm the page cache
    print(f"{args.lm}: order {lm.order}, {lm.meta.get('size_bytes', 0) / 1e6:.1f} MB, entries {lm.meta['entries']:,}")
    for b in batches:
        n_calls = 0
        t0, c0 = time.perf_counter(), time.process_time()
        while time.perf_counter() - t0 < args.seconds:
            i = (n_calls * b) % (pool.shape[0] - b)
            lm.logprob(pool[i: i + b])
            n_calls += 1
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        print(f"batch {b:>6}: {n_calls * b / dt / 1e6:.2f} M queries/s wall, {n_calls * b / dc / 1e6:.2f} M/s of "
              f"CPU time ({dt / n_calls * 1e3:.3f} ms per call; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
