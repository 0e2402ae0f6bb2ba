"""What deeper networks of the same width would cost the Corrector: sentences/s and bundle size against depth.

    python benchmarks/depth_speed.py --data ../shared/data/csc/sighan15_test.tsv --layers 9 12 [--model DIR]

Builds, in a temporary folder, one bundle per depth from MODEL's networks (default: the shipped bundle's) stacked to
that depth (layer i from its layer i mod n, ``training.networks.stacking``; each copy perturbed by noise of 1e-3 so that
the ONNX graph stores every layer's weights, as a trained network's would), exported as MODEL's were (the same CPU
graphs; static int8 ones need ``--calibration``) with MODEL's LM, candidates, ranker and decoding settings. Then,
round after round (the bundles in turn; the best round of each is reported), sentences/s of ``correct_batch`` in
calls of ``--batch-size`` texts, of the networks alone (``Corrector.sites`` on the prepare stage's batches), and of the
networks asked for the generator's distribution at one site a row instead of every site (what the body costs
without the vocabulary head's work at every site).

The stacked networks are untrained copies: only their speed and size mean anything. Their edits differ from a
trained network's, and so can the decoder's work after the networks, by a little. Needs the 'train' extra.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector.bundle import Bundle

NOISE = 1e-3


def stacked_run(model: Path, provenance: dict, layers: int, out: Path) -> Path:
    """A run folder (discriminator/, generator/, provenance.json) with MODEL's networks stacked to ``layers``."""
    import torch
    from transformers import ElectraForMaskedLM, ElectraForPreTraining  # type: ignore[attr-defined]

    from training.networks.stacking import LAYER, depth, stack_layers

    for name, cls in (("discriminator", ElectraForPreTraining), ("generator", ElectraForMaskedLM)):
        gen = torch.Generator().manual_seed(0)  # the same noise in both: a shared body stays shared (one joint graph)
        trained = cls.from_pretrained(model / name, dtype=torch.float32)
        n = depth(trained.state_dict())
        state = stack_layers(trained.state_dict(), layers)
        for key, value in state.items():  # the copies made distinct (ONNX stores identical initializers once)
            m = LAYER.match(key)
            if m and int(m.group(2)) >= n and value.is_floating_point():
                state[key] = value + NOISE * torch.randn(value.shape, generator=gen)
        trained.config.num_hidden_layers = layers
        deeper = cls(trained.config)
        deeper.load_state_dict(state)
        deeper.save_pretrained(out / name)
        shutil.copy(model / name / "vocab.txt", out / name / "vocab.txt")
    (out / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    return out


def stacked_bundle(model: Path, layers: int, work: Path, calibration: Path | None) -> Path:
    """A bundle like MODEL's but for its networks, stacked to ``layers``."""
    from training.bundle import export, quantize

    source = Bundle.load(model)
    run = stacked_run(model, source.manifest.provenance, layers, work / f"run{layers}")
    out = work / f"bundle{layers}"
    export.main(["--run", str(run), "--similarity", str(model / "similarity"), "--out", str(out),
                 "--cpu-onnx", source.manifest.cpu_onnx, *(["--split-head"] if source.graph_names == ("body", "head") else [])])
    defaults = work / "defaults.json"
    defaults.write_text(json.dumps(source.manifest.corrector_defaults), encoding="utf-8")
    update = ["--update", str(out), "--defaults", str(defaults)]
    for flag, path in (("--lm", model / "lm"), ("--candidates", model / "candidates"), ("--ranker", model / "ranker.json")):
        if path.exists():
            update += [flag, str(path)]
    export.main(update)
    if source.int8_static:  # (static graphs are made from the joint one: training.bundle.quantize)
        if calibration is None:
            raise SystemExit(f"{model}'s int8 graphs are static: give --calibration (training.bundle.quantize)")
        quantize.main(["--model", str(out), "--calibration", str(calibration)])
    return out


def one_site_feeds(batches) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The networks' inputs for each batch with one generator position a row (its first site)."""
    feeds = []
    for batch in batches:
        width = max(len(c.enc.ids) for c in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        attn = np.zeros_like(ids)
        for r, c in enumerate(batch):
            ids[r, : len(c.enc.ids)] = c.enc.ids
            attn[r, : len(c.enc.ids)] = 1
        feeds.append((ids, attn, np.array([[c.site_tokens()[0]] for c in batch], dtype=np.int64)))
    return feeds


def mebibytes(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="TSV whose first column is the text")
    ap.add_argument("--layers", type=int, nargs="+", required=True, help="depths to build and measure")
    ap.add_argument("--model", type=Path, default=None, help="bundle (default: the shipped one)")
    ap.add_argument("--calibration", type=Path, default=None, help="sentences for static int8 graphs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from corrector import Corrector
    from corrector.model_path import default_model_path

    model = args.model or default_model_path()
    texts = [line.split("\t")[0] for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    n = json.loads((Path(model) / "discriminator" / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    with tempfile.TemporaryDirectory(prefix="depth_speed") as tmp:
        bundles = {f"{n} (MODEL)": model}
        bundles |= {str(k): stacked_bundle(model, k, Path(tmp), args.calibration) for k in args.layers}
        fixes = {name: Corrector.load(path, threads=args.threads, batch_size=args.batch_size)
                 for name, path in bundles.items()}
        best = {name: [0.0, 0.0, 0.0] for name in bundles}
        for _ in range(args.rounds):
            for name, fix in fixes.items():
                fix.correct_batch(texts[: args.batch_size])  # warm-up
                t0 = time.perf_counter()
                for s in range(0, len(texts), args.batch_size):
                    fix.correct_batch(texts[s : s + args.batch_size])
                batches = fix.prepare(texts).batches
                t1 = time.perf_counter()
                for batch in batches:
                    fix.sites(batch)
                t2 = time.perf_counter()
                for ids, attn, pos in one_site_feeds(batches):
                    fix.networks.run(ids, attn, pos)
                t3 = time.perf_counter()
                rates = (len(texts) / (t1 - t0), len(texts) / (t2 - t1), len(texts) / (t3 - t2))
                best[name] = [max(b, r) for b, r in zip(best[name], rates)]
        networks = fixes[f"{n} (MODEL)"].networks
        print(f"{len(texts)} sentences, {args.threads} threads, calls of {args.batch_size}, best of {args.rounds} rounds; "
              f"networks: {networks.provider}, {networks.precision}")
        print("| layers | correct_batch sent/s | networks alone sent/s | networks, one generator site a row | bundle MiB |\n"
              "|---|---:|---:|---:|---:|")
        for name, path in bundles.items():
            print(f"| {name} | {best[name][0]:.1f} | {best[name][1]:.1f} | {best[name][2]:.1f} | {mebibytes(path):.1f} |")


if __name__ == "__main__":
    main()
