"""What speed to expect from a published Chinese ELECTRA's shape (``training.bundle.from_pretrained``): a random-weight
pair of each shape, with the BERT-Base Chinese vocabulary and HFL's layer sizes, exported as the bundle exports it
(ONNX, int8 for CPUs) with the default bundle's evidence, then timed as ``benchmarks/speed.py`` times a bundle.

    python benchmarks/pretrained_shapes.py --data ../shared/data/csc/sighan15_test.tsv --out runs/shapes \
        [--shapes small,base,large] [--limit 300]

Random weights make the discriminator suspect every character alike, so the whole decoder's speed (candidates and
the LM at every suspect) says little; what the weights do not change is the networks' time. So each shape's
networks are timed alone (``Corrector.sites``: the discriminator on every sentence, the generator at every
character), beside the default model's, whose full decoding is timed as ``benchmarks/speed.py`` times it.
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


def networks_sps(fix, texts: list[str], rounds: int = 2) -> float:
    """Sentences/s of the networks alone (``Corrector.sites`` over calls of the Corrector's batch size), with the
    generator run at every character (``rtd_floor`` 0): the networks' share of a call, at its largest."""
    import time

    prepared = fix.prepare(texts, rtd_floor=0.0)
    best = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        for batch in prepared.batches:
            fix.sites(batch, prepared.settings)
        best = max(best, len(texts) / (time.perf_counter() - t0))
    return best


def main() -> int:
    from corrector import Corrector
    from corrector.bundle import CANDIDATES_DIR, LM_DIR, Bundle
    from training.bundle.export import Evidence, load_pair, write_bundle
    from training.bundle.from_pretrained import char_counts

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
    bundles = {"default": ROOT / "data/electra_models/default"}
    names = {"default": "the default model, 6 x 256 (its generator a head on the discriminator)"}
    for shape in a.shapes.split(","):
        bundle = a.out / shape
        if not (bundle / "manifest.json").is_file():
            disc_dir, gen_dir = random_pair(shape, a.vocab, a.out / f"{shape}-pair")
            disc, gen, vocab = load_pair(disc_dir, gen_dir)
            write_bundle(disc, gen, vocab, bundle, name=shape, char_freq=char_counts(base), half=False,
                         evidence=Evidence(lm=base.file(LM_DIR), candidates=base.file(CANDIDATES_DIR)),
                         cpu_onnx="int8", max_seq_len=128)
            del disc, gen
        cfg = json.loads((bundle / "discriminator" / "config.json").read_text(encoding="utf-8"))
        names[shape] = f"{shape}, {cfg['num_hidden_layers']} x {cfg['hidden_size']}"
        bundles[shape] = bundle
    rows = {}
    for name, bundle in bundles.items():
        fix = Corrector.load(bundle, device="cpu", threads=a.threads, batch_size=32)
        fix.correct_batch(texts[:32])  # warm-up
        rows[name] = {"networks_sps": networks_sps(fix, texts)}
        if name == "default":
            rows[name].update({k: v for k, v in bench_onnx(bundle, texts, "cpu", a.threads, 32).items()
                               if k.endswith("_sps")})
        print(name, {k: round(v, 1) for k, v in rows[name].items()}, flush=True)
    print("| shape | networks alone, sentences/s (calls of 32) |")
    print("|---|---:|")
    for name, r in rows.items():
        print(f"| {names[name]} | {r['networks_sps']:.1f} |")
    (a.out / "shapes.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
