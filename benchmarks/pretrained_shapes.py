"""What speed to expect from a published Chinese ELECTRA's shape (``training.bundle.from_pretrained``): a random-weight
pair of each shape, with the BERT-Base Chinese vocabulary and HFL's layer sizes, exported as the bundle exports it
(ONNX, int8 for CPUs) with the default bundle's evidence, then timed as ``benchmarks/speed.py`` times a bundle.

    python benchmarks/pretrained_shapes.py --data ../shared/data/csc/sighan15_test.tsv --out runs/shapes \
        [--shapes small,base,large] [--limit 300]

Random weights make the discriminator suspect characters at random, so the networks' time is what it would be
with the published weights, while the decoder's share (candidates, the LM) depends on how many characters are
suspected; the default bundle's own networks, timed the same way, are the first row.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _checkout  # noqa: F401  (training/ is imported from the checkout)
from speed import bench_onnx, read_sources

ROOT = Path(__file__).resolve().parents[1]
# HFL's chinese-electra (and -180g) configurations: discriminator (hidden, layers, heads, intermediate, embedding)
# and the generator's hidden, heads and intermediate (a quarter of the discriminator's width for base and large)
SHAPES = {
    "small": ((256, 12, 4, 1024, 128), (64, 1, 256)),
    "base": ((768, 12, 12, 3072, 768), (192, 3, 768)),
    "large": ((1024, 24, 16, 4096, 1024), (256, 4, 1024)),
}


def random_pair(shape: str, vocab: Path, out: Path) -> tuple[Path, Path]:
    import shutil

    import torch
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    (h, layers, heads, inter, emb), (gh, gheads, ginter) = SHAPES[shape]
    n = sum(1 for _ in vocab.open(encoding="utf-8"))
    torch.manual_seed(0)
    def config(hidden: int, n_heads: int, intermediate: int) -> ElectraConfig:
        return ElectraConfig(vocab_size=n, embedding_size=emb, hidden_size=hidden, num_hidden_layers=layers,
                             num_attention_heads=n_heads, intermediate_size=intermediate, max_position_embeddings=512)

    disc = ElectraForPreTraining(config(h, heads, inter))
    gen = ElectraForMaskedLM(config(gh, gheads, ginter))
    dirs = out / "discriminator", out / "generator"
    for model, d in zip((disc, gen), dirs):
        model.save_pretrained(d)
        shutil.copyfile(vocab, d / "vocab.txt")
    return dirs


def main() -> int:
    from corrector.bundle import CANDIDATES_DIR, LM_DIR, Bundle
    from training.bundle.export import Evidence, load_pair, write_bundle
    from training.bundle.from_pretrained import char_counts, shape_of

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--vocab", type=Path, default=ROOT.parent / "shared/data/vocab/bert_base_chinese_vocab.txt")
    ap.add_argument("--shapes", default="small,base,large")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    texts = read_sources(a.data, a.limit)
    base = Bundle.load(ROOT / "data/electra_models/default")
    rows = {"default": bench_onnx(None, texts, "cpu", a.threads, 32)}
    shapes = {"default": "ours (6 x 256, generator head on the discriminator)"}
    for shape in a.shapes.split(","):
        disc_dir, gen_dir = random_pair(shape, a.vocab, a.out / f"{shape}-pair")
        disc, gen, vocab = load_pair(disc_dir, gen_dir)
        bundle = a.out / shape
        write_bundle(disc, gen, vocab, bundle, name=shape, char_freq=char_counts(base), half=False,
                     evidence=Evidence(lm=base.file(LM_DIR), candidates=base.file(CANDIDATES_DIR)),
                     cpu_onnx="int8", max_seq_len=128)
        s = shape_of(disc.config)
        shapes[shape] = f"{s['layers']} x {s['hidden']}"
        del disc, gen
        rows[shape] = bench_onnx(bundle, texts, "cpu", a.threads, 32)
        print(shape, {k: round(v, 1) for k, v in rows[shape].items() if k.endswith("_sps")}, flush=True)
    print("| shape | sentences/s, calls of 32 | one at a time | p50 latency |")
    print("|---|---:|---:|---:|")
    for name, r in rows.items():
        lat = sorted(r["latency"])
        print(f"| {name}: {shapes[name]} | {r['batched_sps']:.1f} | {r['single_sps']:.1f} | "
              f"{1000 * lat[len(lat) // 2]:.0f} ms |")
    (a.out / "shapes.json").write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "latency"}
                                                   for k, v in rows.items()}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
