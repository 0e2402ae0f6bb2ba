"""Exactness and speed of each way to run the networks: does a text get the same result alone as in a batch?

    python benchmarks/determinism.py --data ../shared/data/csc/sighan15_test.tsv --limit 300 \\
        --model data/electra_models/default --static-model BUNDLE_WITH_STATIC_INT8 [--threads 2]

Options: ``fp32`` (float graphs), ``int8-dynamic`` (the dynamically quantised graphs run on whole
padded batches: activation scales per batch tensor), ``int8-rows`` (the same graphs, one unpadded
row per call), ``int8-static`` (graphs from ``training.bundle.quantize``: calibrated, fixed scales).
For each it prints sentences/s in batches of ``--batch-size`` (the best of ``--rounds`` passes, the
options taking turns, so a machine shared with other work slows them alike), how many of the texts
come out different alone (one text per call) and inside shuffled batches, and sentence correction F1.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

OPTIONS = ("fp32", "int8-dynamic", "int8-rows", "int8-static")


def load(model: Path | None, option: str, threads: int):
    from corrector import Corrector

    fix = Corrector.load(model, device="cpu", threads=threads, precision="fp32" if option == "fp32" else "int8")
    if option == "int8-static" and not fix.bundle.int8_static:
        raise SystemExit(f"{fix.bundle.path} has no static int8 graphs (python -m training.bundle.quantize)")
    if option in ("int8-dynamic", "int8-rows") and fix.bundle.int8_static:
        raise SystemExit(f"{fix.bundle.path} has static int8 graphs; pass a bundle with dynamic ones")
    if option == "int8-dynamic":  # the same graphs, whole padded batches on ONNX Runtime's intra-op threads
        from corrector.runtime.sessions import OnnxNetworks

        assert isinstance(fix.networks, OnnxNetworks)
        fix = fix.with_networks(OnnxNetworks(fix.networks.files, device="cpu", threads=threads))
    assert fix.networks.rows_alone == (option == "int8-rows")
    return fix


def batched(fix, texts: list[str], batch: int) -> tuple[list, float]:
    """The corrections, and sentences/s."""
    t0 = time.perf_counter()
    out = [c for s in range(0, len(texts), batch) for c in fix.correct_batch(texts[s : s + batch])]
    return out, len(texts) / (time.perf_counter() - t0)


def exactness(fix, pairs: list[tuple[str, str]], batch: int, seed: int) -> dict:
    from training.fitting.metrics import csc_metrics

    texts = [s for s, _ in pairs]
    in_batches, _ = batched(fix, texts, batch)
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
    f1 = csc_metrics((s, t, c.target) for (s, t), c in zip(pairs, in_batches))["sentence_correction"]["f1"]
    return {"batched_vs_alone": sum(a != b for a, b in zip(in_batches, alone)),
            "shuffled_vs_alone": sum(shuffled[i] != a for i, a in enumerate(alone)), "f1": f1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="source<TAB>target pairs")
    ap.add_argument("--model", type=Path, default=None, help="bundle with dynamic int8 graphs (default: the bundled one)")
    ap.add_argument("--static-model", type=Path, default=None, help="bundle with static int8 graphs (training.bundle.quantize)")
    ap.add_argument("--option", nargs="+", choices=OPTIONS, default=None, help="default: all that the bundles allow")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from training.data.csc_data import read_pairs

    pairs = read_pairs(args.data)[: args.limit]
    options = args.option or [o for o in OPTIONS if o != "int8-static" or args.static_model]
    fixers = {o: load(args.static_model if o == "int8-static" else args.model, o, args.threads) for o in options}
    texts = [s for s, _ in pairs]
    speed = dict.fromkeys(options, 0.0)
    for fix in fixers.values():
        fix.correct_batch(texts[: args.batch_size])  # warm-up
    for _ in range(args.rounds):
        for o, fix in fixers.items():
            speed[o] = max(speed[o], batched(fix, texts, args.batch_size)[1])
    print(f"{len(pairs)} sentences, batches of {args.batch_size}, {args.threads} threads, best of {args.rounds}")
    for o, fix in fixers.items():
        r = exactness(fix, pairs, args.batch_size, args.seed)
        print(f"{o:13s} {speed[o]:7.1f} sent/s  differ alone vs batched {r['batched_vs_alone']:4d}  "
              f"alone vs shuffled batches {r['shuffled_vs_alone']:4d}  sentence correction F1 {r['f1']:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
