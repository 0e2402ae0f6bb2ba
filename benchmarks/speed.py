"""Speed of the Corrector (ONNX Runtime) against a naive per-sentence transformers loop, same weights.

    python benchmarks/speed.py --data ../shared/data/csc/sighan15_test.tsv [--model DIR] [--threads 2]

Prints sentences/s for batched correct_batch (calls of ``--batch-size`` texts, and one call for all of them; the
best of ``--rounds`` passes each), per-sentence latency percentiles for correct(), and the
same for a torch eager loop (discriminator, then the generator's full output when any character
scores above the Corrector's threshold, one sentence at a time), with the ratio from this one run.
``--precision`` picks the float or int8 ONNX graphs. Needs the 'train' extra for the torch side.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from corrector.bundle import PRECISIONS, Precision
from corrector.runtime.sessions import Device


def read_sources(path: Path, limit: int) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = [line.split("\t")[0] for line in lines if line.strip()]
    return out[:limit] if limit else out


def percentiles(xs: list[float]) -> str:
    ms = np.array(xs) * 1000
    return " ".join(f"p{q}={np.percentile(ms, q):.1f}ms" for q in (50, 90, 99))


def bench_onnx(model: Path | None, texts: list[str], device: Device, threads: int, batch: int,
               precision: Precision = "auto", use_lm: bool = True, rounds: int = 1) -> dict:
    from corrector import Corrector

    fix = Corrector.load(model, device=device, threads=threads, batch_size=batch, precision=precision, use_lm=use_lm)
    fix.correct_batch(texts[:batch])  # warm-up
    batched = whole = 0.0
    for _ in range(rounds):  # the best pass: other work on a shared machine only ever slows one down
        t0 = time.perf_counter()
        for s in range(0, len(texts), batch):
            fix.correct_batch(texts[s : s + batch])
        batched = max(batched, len(texts) / (time.perf_counter() - t0))
    for _ in range(rounds):  # one call for everything (as the CLI and batch jobs do): batches of ``batch`` inside
        t0 = time.perf_counter()
        fix.correct_batch(texts)
        whole = max(whole, len(texts) / (time.perf_counter() - t0))
    lat = []
    for t in texts:
        t1 = time.perf_counter()
        fix.correct(t)
        lat.append(time.perf_counter() - t1)
    return {"provider": f"{fix.networks.provider}, {fix.networks.precision}", "batched_sps": batched, "whole_sps": whole,
            "single_sps": len(texts) / sum(lat), "latency": lat}


def bench_torch(model: Path, texts: list[str], threads: int) -> dict:
    import torch
    from transformers import BertTokenizerFast, ElectraForMaskedLM, ElectraForPreTraining  # type: ignore[attr-defined]

    torch.set_num_threads(threads)
    tok = BertTokenizerFast(str(model / "discriminator" / "vocab.txt"))
    disc = ElectraForPreTraining.from_pretrained(model / "discriminator", dtype=torch.float32).eval()
    gen = ElectraForMaskedLM.from_pretrained(model / "generator", dtype=torch.float32).eval()
    lat = []
    with torch.no_grad():
        for t in texts[:5] + texts:
            t1 = time.perf_counter()
            enc = tok(t, return_tensors="pt", truncation=True, max_length=128)
            torch.sigmoid(disc(**enc).logits)[0]
            gen(**enc).logits[0].argmax(-1)  # the Corrector, too, runs both networks on every sentence
            lat.append(time.perf_counter() - t1)
    lat = lat[5:]
    return {"single_sps": len(texts) / sum(lat), "latency": lat}


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    ap.add_argument("--precision", default="auto", choices=PRECISIONS,
                    help="ONNX graphs on CPU (auto = the bundle's recommendation)")
    ap.add_argument("--no-torch", action="store_true", help="skip the transformers baseline")
    ap.add_argument("--no-lm", action="store_true", help="decode without the character LM")
    ap.add_argument("--rounds", type=int, default=3, help="batched passes; the best is reported")
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    from corrector.model_path import default_model_path

    model = args.model or default_model_path()
    texts = read_sources(args.data, args.limit)
    chars = statistics.mean(len(t) for t in texts)
    print(f"{len(texts)} sentences ({chars:.1f} characters on average), model {model}")
    onnx = bench_onnx(model, texts, args.device, args.threads, args.batch_size, args.precision, not args.no_lm,
                      args.rounds)
    print(f"Corrector/ONNX ({onnx['provider']}): batched {onnx['batched_sps']:.1f} sent/s "
          f"({args.batch_size} per call), {onnx['whole_sps']:.1f} sent/s (all in one call); "
          f"one at a time {onnx['single_sps']:.1f} sent/s, {percentiles(onnx['latency'])}")
    if not args.no_torch:
        naive = bench_torch(model, texts, args.threads)
        print(f"transformers eager, one at a time: {naive['single_sps']:.1f} sent/s, {percentiles(naive['latency'])}")
        print(f"ratio batched ONNX / naive torch: {onnx['batched_sps'] / naive['single_sps']:.1f}x; "
              f"one-at-a-time ONNX / naive torch: {onnx['single_sps'] / naive['single_sps']:.1f}x")


if __name__ == "__main__":
    main()
