"""Exactness and speed of each way to run the networks: does a text get the same result alone as in a batch?

    python benchmarks/determinism.py --data ../shared/data/csc/sighan15_test.tsv --limit 300 \\
        --model data/electra_models/default --option fp32 int8-dynamic int8-rows [--threads 2]
    python benchmarks/determinism.py ... --model BUNDLE_WITH_STATIC_INT8 --option int8-static

Options: ``fp32`` (float graphs), ``int8-dynamic`` (the dynamically quantised graphs run on whole
padded batches: activation scales per batch tensor), ``int8-rows`` (the same graphs, one unpadded
row per call), ``int8-static`` (graphs from ``training.quantize``: calibrated, fixed scales).
For each it prints sentences/s in batches of ``--batch-size``, how many of the texts come out
different alone (one text per call) and inside shuffled batches, and sentence correction F1.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

OPTIONS = ("fp32", "int8-dynamic", "int8-rows", "int8-static")


def load(model: Path | None, option: str, threads: int):
    from corrector import Corrector

    fix = Corrector.load(model, device="cpu", threads=threads, precision="fp32" if option == "fp32" else "int8")
    if option == "int8-static" and not fix.bundle.int8_static:
        raise SystemExit(f"{fix.bundle.path} has no static int8 graphs (python -m training.quantize)")
    if option in ("int8-dynamic", "int8-rows") and fix.bundle.int8_static:
        raise SystemExit(f"{fix.bundle.path} has static int8 graphs; pass a bundle with dynamic ones")
    fix.networks.rows_alone = option == "int8-rows"
    return fix


def measure(fix, pairs: list[tuple[str, str]], batch: int, seed: int) -> dict:
    from training.metrics import csc_metrics

    texts = [s for s, _ in pairs]
    fix.correct_batch(texts[:batch])  # warm-up
    t0 = time.perf_counter()
    batched = [c for s in range(0, len(texts), batch) for c in fix.correct_batch(texts[s : s + batch])]
    sps = len(texts) / (time.perf_counter() - t0)
    alone = [fix.correct(t) for t in texts]
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    shuffled: dict[int, object] = {}
    rng = random.Random(seed + 1)
    at = 0
    while at < len(order):  # shuffled calls of random sizes
        n = rng.randint(1, 2 * batch)
        idx = order[at : at + n]
        for i, c in zip(idx, fix.correct_batch([texts[i] for i in idx])):
            shuffled[i] = c
        at += n
    f1 = csc_metrics((s, t, c.target) for (s, t), c in zip(pairs, batched))["sentence_correction"]["f1"]
    return {"sps": sps, "batched_vs_alone": sum(a != b for a, b in zip(batched, alone)),
            "shuffled_vs_alone": sum(shuffled[i] != a for i, a in enumerate(alone)), "f1": f1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="source<TAB>target pairs")
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--option", nargs="+", choices=OPTIONS, default=["fp32", "int8-dynamic", "int8-rows"])
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from training.csc_data import read_pairs

    pairs = read_pairs(args.data)[: args.limit]
    print(f"{len(pairs)} sentences, batches of {args.batch_size}, {args.threads} threads")
    for option in args.option:
        r = measure(load(args.model, option, args.threads), pairs, args.batch_size, args.seed)
        print(f"{option:13s} {r['sps']:7.1f} sent/s  differ alone vs batched {r['batched_vs_alone']:4d}  "
              f"alone vs shuffled batches {r['shuffled_vs_alone']:4d}  sentence correction F1 {r['f1']:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
