"""Write a complete model bundle (see corrector/bundle.py) from a trained generator/discriminator pair.

    python -m training.bundle.export --run runs/finetune --similarity runs/similarity \\
        --out data/electra_models/default --name default
    python -m training.bundle.export --hf DISC_DIR GEN_DIR --out OUT_DIR   # any HF ELECTRA pair with a 21128 vocab
    python -m training.bundle.export --update BUNDLE --lm runs/lm --candidates runs/candidates --ranker runs/ranker.json

The bundle is written next to OUT and moved into place at the end, so a failed export never
leaves a half-written bundle behind.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from corrector.bundle import (
    CANDIDATES_DIR,
    LM_DIR,
    RANKER,
    SIMILARITY_DIR,
    VOCAB,
    Bundle,
    sha256_file,
)
from corrector.evidence.dictionary import write_word_table
from corrector.evidence.particles import FILE as PARTICLES
from corrector.manifest import Manifest, finish_bundle
from corrector.text.tokenize import read_vocab_list
from corrector.types import CorrectorError

from .onnx_export import OPSET, compact_pair, export_pair, quantize_pair, shares_body
from .onnx_split import split_graphs, split_record


def load_pair(disc_dir: Path, gen_dir: Path):
    from transformers import ElectraForMaskedLM, ElectraForPreTraining
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-tensor loading bars would bury a one-line error on stderr
    for d in (disc_dir, gen_dir):
        if not (d / "config.json").is_file():
            raise CorrectorError(f"{d} is not a Hugging Face model directory (no config.json)")
    vocab = disc_dir / "vocab.txt"
    if not vocab.is_file():
        raise CorrectorError(f"{disc_dir} has no vocab.txt")
    if (gen_dir / "vocab.txt").is_file() and sha256_file(gen_dir / "vocab.txt") != sha256_file(vocab):
        raise CorrectorError(f"{gen_dir}/vocab.txt differs from {vocab}")
    disc = ElectraForPreTraining.from_pretrained(disc_dir, dtype=torch.float32).eval()
    gen = ElectraForMaskedLM.from_pretrained(gen_dir, dtype=torch.float32).eval()
    n_vocab = len(read_vocab_list(vocab))
    if disc.config.vocab_size != n_vocab or gen.config.vocab_size != n_vocab:
        raise CorrectorError(f"vocab.txt has {n_vocab} entries; models expect "
                             f"{disc.config.vocab_size} (discriminator) / {gen.config.vocab_size} (generator)")
    return disc, gen, vocab


def write_bundle(disc, gen, vocab: Path, out: Path, *, name: str, similarity: Path | None = None,
                 char_freq: dict[str, int] | None = None, provenance: dict | None = None,
                 metrics: dict | None = None, corrector_defaults: dict | None = None,
                 max_seq_len: int | None = None, half: bool = True, int8: bool = True,
                 cpu_onnx: str = "fp32", evidence: Evidence | None = None, split_head: bool = False) -> Manifest:
    """Save both networks (fp16 safetensors by default), ONNX (checked against torch) and its int8 copies,
    tables, manifest. ``cpu_onnx="int8"`` makes the int8 graphs the CPU default (measure F1 and speed first).
    ``split_head``: a joint graph is stored as its body and head apart (``onnx_split``), so the Corrector can
    run the vocabulary head only where the discriminator suspects a character."""
    if cpu_onnx not in ("fp32", "int8") or (cpu_onnx == "int8" and not int8):
        raise ValueError(f"cpu_onnx must be 'fp32' or 'int8' (with int8 graphs written), got {cpu_onnx!r}")
    out = Path(out)
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        if half:  # round once, so the HF weights and the ONNX graphs hold the same numbers
            for m in (disc, gen):
                for p in m.parameters():
                    p.data = p.data.half().float()
        for sub, model in (("discriminator", disc), ("generator", gen)):
            (model.half() if half else model).save_pretrained(tmp / sub)
            model.float()
            shutil.copyfile(vocab, tmp / sub / "vocab.txt")
        diffs = export_pair(disc, gen, tmp / "onnx")
        onnx_info: dict = {"opset": OPSET, "max_abs_diff_vs_torch": diffs}
        max_len = min(37, disc.config.max_position_embeddings)
        if int8:
            onnx_info["int8_vs_fp32"] = quantize_pair(tmp / "onnx", disc.config.vocab_size, max_len)
        onnx_info["fp16_stored_bytes_saved"] = compact_pair(tmp / "onnx", disc.config.vocab_size, max_len)
        if split_head and shares_body(disc, gen):
            onnx_info |= split_record(split_graphs(tmp / "onnx", disc.config.vocab_size, max_len))
        if similarity is not None:  # the tables only, not a confusion .npy that may sit beside them
            shutil.copytree(similarity, tmp / SIMILARITY_DIR,
                            ignore=lambda d, names: [n for n in names if n not in ("pinyin.tsv", "shape.tsv", "meta.json")])
        else:
            from ..evidence.similarity import build_tables

            build_tables(read_vocab_list(vocab), char_freq or {}, tmp / SIMILARITY_DIR)
        seq = max_seq_len or min(128, disc.config.max_position_embeddings)
        manifest = Manifest(
            name=name,
            version=dt.date.today().isoformat(),
            created=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            vocab_sha256=sha256_file(tmp / VOCAB),
            vocab_size=disc.config.vocab_size,
            max_seq_len=seq,
            onnx=onnx_info,
            cpu_onnx="int8" if cpu_onnx == "int8" else "fp32",
            provenance=portable(provenance or {}),
            metrics=portable(metrics or {}),
            corrector_defaults=corrector_defaults or {},
        )
        write_word_table(tmp, tmp / VOCAB, manifest.vocab_sha256)  # jieba's words, read fast at start-up
        if evidence is not None:
            evidence.copy_into(tmp, manifest)
        finish_bundle(tmp, out, manifest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


@dataclass
class Evidence:
    """The decoder's evidence besides the networks: character LM, static candidates, fitted ranker, the particles'
    table."""

    lm: Path | None = None  # a directory from training.evidence.char_lm
    candidates: Path | None = None  # a directory from training.evidence.candidates
    ranker: Path | None = None  # ranker.json from training.fitting.fit
    particles: Path | None = None  # particles.json from training.evidence.particles

    def copy_into(self, root: Path, manifest: Manifest) -> None:
        if self.lm is not None:
            shutil.rmtree(root / LM_DIR, ignore_errors=True)
            shutil.copytree(self.lm, root / LM_DIR, ignore=shutil.ignore_patterns("*.log"))
            meta = json.loads((root / LM_DIR / "meta.json").read_text(encoding="utf-8"))
            keys = ("format", "order", "smoothing", "prune", "ngrams", "quant_bits", "heldout_perplexity",
                    "build_seconds", "in_domain", "corpus_files")
            size = sum(p.stat().st_size for p in (root / LM_DIR).rglob("*") if p.is_file())
            manifest.lm = {**{k: meta[k] for k in keys if k in meta}, "size_bytes": size}
        if self.candidates is not None:
            shutil.rmtree(root / CANDIDATES_DIR, ignore_errors=True)
            shutil.copytree(self.candidates, root / CANDIDATES_DIR)
            meta = json.loads((root / CANDIDATES_DIR / "candidates.json").read_text(encoding="utf-8"))
            manifest.candidates = {k: meta[k] for k in ("pool_size", "sources", "pairs", "min_pinyin", "min_shape",
                                                       "tone_factor", "fitted_on") if k in meta}
        if self.particles is not None:
            (root / PARTICLES).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self.particles, root / PARTICLES)
        if self.ranker is not None:
            shutil.copyfile(self.ranker, root / RANKER)
            r = json.loads((root / RANKER).read_text(encoding="utf-8"))
            manifest.ranker = {"threshold": r["threshold"], "threshold_no_lm": r["threshold_no_lm"], **r.get("meta", {})}


def portable(provenance: dict) -> dict:
    """Provenance or metrics without this machine's paths: an absolute path keeps only its last component."""
    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        if isinstance(v, str) and v.startswith("/"):
            return Path(v).name
        return v
    return clean(provenance)


def update_bundle(bundle: Path, evidence: Evidence, metrics: dict | None = None,
                  corrector_defaults: dict | None = None) -> Manifest:
    """Add or replace the decoder's evidence in an existing bundle (the networks stay as they are)."""
    manifest = Bundle.load(bundle).manifest
    tmp = bundle.with_name(bundle.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(bundle, tmp)
    try:
        evidence.copy_into(tmp, manifest)
        manifest.provenance = portable(manifest.provenance)
        if metrics is not None:
            manifest.metrics = portable(metrics)
        if corrector_defaults is not None:
            manifest.corrector_defaults = corrector_defaults
        finish_bundle(tmp, bundle, manifest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def export_hf_pair(disc_dir: Path, gen_dir: Path, out: Path, name: str | None = None) -> Manifest:
    """What ``python -m training.bundle.export --hf DISC GEN --out OUT`` runs: any HF ELECTRA pair → bundle."""
    disc, gen, vocab = load_pair(Path(disc_dir), Path(gen_dir))
    return write_bundle(disc, gen, vocab, Path(out), name=name or Path(out).name,
                        provenance={"source": {"discriminator": str(disc_dir), "generator": str(gen_dir)}},
                        half=False)


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(prog="python -m training.bundle.export", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--run", type=Path,
                     help="training run folder holding discriminator/ and generator/ (and provenance.json)")
    src.add_argument("--update", type=Path, metavar="BUNDLE",
                     help="add or replace --lm/--candidates/--ranker (and --metrics, --defaults) in a bundle")
    src.add_argument("--hf", nargs=2, type=Path, metavar=("DISC_DIR", "GEN_DIR"),
                     help="a Hugging Face ElectraForPreTraining + ElectraForMaskedLM pair (fp32, no tuned defaults)")
    ap.add_argument("--out", type=Path, help="bundle folder to write (replaced if present)")
    ap.add_argument("--lm", type=Path, help="character LM directory (training.evidence.char_lm)")
    ap.add_argument("--candidates", type=Path, help="candidate table directory (training.evidence.candidates)")
    ap.add_argument("--ranker", type=Path, help="ranker.json (training.fitting.fit)")
    ap.add_argument("--particles", type=Path, help="the particles' table (training.evidence.particles)")
    ap.add_argument("--name", default=None, help="bundle name (default: OUT's folder name)")
    ap.add_argument("--similarity", type=Path, default=None,
                    help="tables from training.evidence.similarity (default: build them from the vocab)")
    ap.add_argument("--metrics", type=Path, default=None, help="JSON report(s) from training.fitting.evaluate to embed")
    ap.add_argument("--defaults", type=Path, default=None, help="JSON of tuned corrector settings to embed, or a bundle folder (its settings)")
    ap.add_argument("--full-precision", action="store_true", help="keep fp32 safetensors (default fp16)")
    ap.add_argument("--no-int8", dest="int8", action="store_false", help="skip the int8-quantised ONNX copies")
    ap.add_argument("--split-head", action="store_true",
                    help="store a joint graph as its body and vocabulary head apart (the head then runs only where "
                         "the RTD score reaches the rtd_floor setting)")
    ap.add_argument("--cpu-onnx", choices=["fp32", "int8"], default="fp32",
                    help="graphs the Corrector runs on CPU by default (int8 only after measuring its F1 and speed)")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    if not args.update and args.out is None:
        ap.error("--out is required with --run and --hf")
    evidence = Evidence(args.lm, args.candidates, args.ranker, args.particles)
    try:
        if args.update:
            manifest = update_bundle(args.update, evidence, _read_json(args.metrics), read_defaults(args.defaults))
            size = sum(p.stat().st_size for p in args.update.rglob("*") if p.is_file())
            print(f"updated {args.update} ({size / 1e6:.1f} MB): lm {manifest.lm.get('size_bytes', 0) / 1e6:.1f} MB, "
                  f"ranker threshold {manifest.ranker.get('threshold')}")
            return
        if args.hf:
            disc_dir, gen_dir = args.hf
            manifest = export_hf_pair(disc_dir, gen_dir, args.out, args.name)
            diffs = manifest.onnx["max_abs_diff_vs_torch"]
            print(f"wrote {args.out}")
            print("max abs difference ONNX vs torch: " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
            return
        manifest = export_run(args, evidence)
    except (CorrectorError, ValueError) as e:  # a bad input pair, or ONNX disagreeing with torch
        sys.stderr.write(f"error: {e}\n")
        sys.exit(1)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({size / 1e6:.1f} MB); ONNX vs torch max abs diff: {manifest.onnx['max_abs_diff_vs_torch']}"
          + (f"; int8 vs fp32: {manifest.onnx['int8_vs_fp32']}" if args.int8 else ""))


def _read_json(path: Path | None) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path else None


def read_defaults(path: Path | None) -> dict | None:
    """``--defaults``: a JSON file of decoding settings, or a bundle folder, whose manifest's settings are taken."""
    if path is not None and path.is_dir():
        return dict(Bundle.load(path).manifest.corrector_defaults)
    return _read_json(path)


def export_run(args: argparse.Namespace, evidence: Evidence) -> Manifest:
    disc, gen, vocab = load_pair(args.run / "discriminator", args.run / "generator")
    prov_file = args.run / "provenance.json"
    provenance = json.loads(prov_file.read_text(encoding="utf-8")) if prov_file.exists() else {}
    metrics = json.loads(args.metrics.read_text(encoding="utf-8")) if args.metrics else {}
    defaults = read_defaults(args.defaults) or {}
    return write_bundle(disc, gen, vocab, args.out, name=args.name or args.out.name,
                        similarity=args.similarity, provenance=provenance, metrics=metrics,
                        corrector_defaults=defaults, half=not args.full_precision, int8=args.int8,
                        cpu_onnx=args.cpu_onnx, evidence=evidence, split_head=args.split_head)


if __name__ == "__main__":
    main()
