"""Throughput of ``python -m corrector batch`` on this machine: the local engine against Ray Data, same input.

    python benchmarks/batch.py --data ../shared/data/csc/sighan15_test.tsv --lines 2000 [--num-actors 2]

Writes the first ``--lines`` texts of ``--data`` (a TSV's first column, or a text file's lines; cycled
when the file is shorter) to a temporary file, runs the batch command on it once per engine as a user
would (a fresh process each), and prints each run's lines/s as the job reports it (wall time from
start to summary: model load, and for Ray the runtime and actor start, included), the ratio, the
per-actor rate, and whether the two output directories are identical. Needs the 'distributed' extra.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from itertools import cycle, islice
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def read_texts(path: Path, n: int) -> tuple[list[str], int]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        texts = [line.rstrip("\n").split("\t")[0] for line in f if line.strip()]
    return list(islice(cycle(texts), n)), min(len(texts), n)


def run(engine: str, src: Path, out: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "-m", "corrector", "batch", "--input", str(src), "--output", str(out),
           "--engine", engine, "--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size)]
    if args.model:
        cmd += ["--model", str(args.model)]
    if engine == "ray":
        cmd += ["--num-actors", str(args.num_actors), "--num-cpus", str(args.num_actors * args.actor_cpus),
                "--actor-cpus", str(args.actor_cpus)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{engine} run failed: {proc.stderr.strip()[-500:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return {**summary, "process_s": wall}


def identical(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in a.iterdir() if p.is_file() and p.name != "summary.json")
    return names == sorted(p.name for p in b.iterdir() if p.is_file() and p.name != "summary.json") and all(
        (a / n).read_bytes() == (b / n).read_bytes() for n in names)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared/data/csc/sighan15_test.tsv")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--num-actors", type=int, default=2)
    ap.add_argument("--actor-cpus", type=int, default=1)
    ap.add_argument("--shard-size", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()

    texts, distinct = read_texts(args.data, args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.txt"
        src.write_text("\n".join(texts) + "\n", encoding="utf-8")
        print(f"{len(texts)} lines ({distinct} distinct) from {args.data}, {sum(map(len, texts))} characters; "
              f"shards of {args.shard_size}, batches of {args.batch_size}")
        local = run("local", src, Path(tmp) / "local", args)
        ray = run("ray", src, Path(tmp) / "ray", args)
        same = identical(Path(tmp) / "local", Path(tmp) / "ray")
    print(f"local: {local['lines_per_s']:.1f} lines/s ({local['seconds']:.1f} s; one process, "
          "ONNX Runtime's default threads)")
    print(f"ray:   {ray['lines_per_s']:.1f} lines/s ({ray['seconds']:.1f} s; {args.num_actors} actors x "
          f"{args.actor_cpus} CPU, local Ray runtime started by the job)")
    print(f"ray / local: {ray['lines_per_s'] / local['lines_per_s']:.2f}")
    print(f"per actor: {ray['lines_per_s'] / args.num_actors:.1f} lines/s; outputs identical: {same}")


if __name__ == "__main__":
    main()
