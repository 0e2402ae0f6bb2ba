"""A zero-shot bundle from a published Chinese ELECTRA (HFL's chinese-electra small/base/large, the 180g releases,
or any Hugging Face ELECTRA pair): its discriminator's replaced-token head flags suspects, its generator proposes.

    python -m training.bundle.from_pretrained --pretrained DIR --out BUNDLE [--data ../shared/data] [--base BUNDLE]
    python -m training.bundle.from_pretrained --discriminator DDIR --generator GDIR --out BUNDLE

DIR holds ``discriminator/`` and ``generator/`` (HFL's layout: each a Hugging Face model directory with its
``config.json``, weights and ``vocab.txt``). The bundle gets:

- the two networks as ONNX (checked against torch), with int8 copies for CPUs;
- the similarity tables and jieba's word table keyed to the pair's own vocabulary (the characters' corpus counts
  from the base bundle's tables); the candidate table, the foreign names and the character LM of the base bundle
  (the default one unless ``--base``), which are keyed by characters, not by ids;
- a ranker and its threshold fitted on the dev split (``training.data.splits``: sighan_train pairs that the base
  bundle's LM and candidates held out), so that the published networks' scores are weighed as they deserve.

``python -m corrector --model BUNDLE`` then corrects with the published networks in place of ours. Bigger encoders
cost speed (README, "Start from a published ELECTRA"); the manifest records the shape.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from corrector.bundle import CANDIDATES_DIR, LM_DIR, SIMILARITY_DIR, Bundle
from corrector.evidence.similarity import SimilarityTables
from corrector.types import CorrectorError

STEPS = "ranker,threshold"
MAX_ROWS = 200_000  # the ranker's training rows at most (``ranker --max-rows``): a few minutes a fit on 2 cores
LOOKED_AT = 0.15  # the share of the dev split's characters the generator and the ranker look at, at most (rtd_floor)
SHORTLIST = 8  # candidates a site in the rows and the one shortlist tried on dev: a pair not fine-tuned for spelling
# flags most characters, and each dev decode (a threshold sweep each way, the calibration) scores all of them


def pair_dirs(pretrained: Path | None, discriminator: Path | None, generator: Path | None) -> tuple[Path, Path]:
    """The discriminator's and the generator's directories; CorrectorError (one line) when one is missing."""
    if pretrained is not None:
        discriminator = discriminator or pretrained / "discriminator"
        generator = generator or pretrained / "generator"
    if discriminator is None or generator is None:
        raise CorrectorError("give --pretrained DIR (with discriminator/ and generator/) or both --discriminator "
                             "and --generator")
    for role, d in (("discriminator", discriminator), ("generator", generator)):
        if not (d / "config.json").is_file():
            raise CorrectorError(f"no {role} at {d} (a Hugging Face model directory with config.json): the corrector "
                                 "needs both networks of an ELECTRA pair, the generator to propose corrections")
    return discriminator, generator


def shape_of(config) -> dict:
    return {"hidden": config.hidden_size, "layers": config.num_hidden_layers, "heads": config.num_attention_heads,
            "intermediate": config.intermediate_size, "embedding": config.embedding_size,
            "vocab": config.vocab_size, "max_positions": config.max_position_embeddings}


def rtd_floor_for(bundle: Path, texts: list[str], looked_at: float = LOOKED_AT) -> float:
    """The RTD floor at which the bundle's discriminator flags at most ``looked_at`` of the characters of ``texts``
    (never below the decoder's default floor): a pair not fine-tuned for spelling scores most characters as
    suspects, and each suspect costs the generator's head, the candidates and the ranker. A pair whose scores are
    low on correct text keeps the default floor."""
    import numpy as np

    from corrector import Corrector
    from corrector.config import CorrectorConfig

    fix = Corrector.load(bundle, device="cpu")
    networks: Any = fix.networks  # corrector.runtime.sessions.OnnxNetworks
    prepared = fix.prepare(texts)
    scores: list[np.ndarray] = []
    for batch in prepared.batches:
        width = max(len(c.enc.ids) for c in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        attn = np.zeros((len(batch), width), dtype=np.int64)
        for r, c in enumerate(batch):
            ids[r, : len(c.enc.ids)], attn[r, : len(c.enc.ids)] = c.enc.ids, 1
        p = networks.discriminate(ids, attn)
        for r, c in enumerate(batch):
            editable = np.flatnonzero(np.asarray(c.enc.char_pos) >= 0)
            scores.append(p[r, editable])
    default = CorrectorConfig().rtd_floor
    allp = np.concatenate(scores) if scores else np.zeros(0)
    if not len(allp):
        return default
    return round(max(default, float(np.quantile(allp, 1.0 - looked_at))), 6)


def char_counts(base: Bundle) -> dict[str, int]:
    """Each character's corpus count, as the base bundle's similarity tables hold it."""
    tables = SimilarityTables.load(base.file(SIMILARITY_DIR))
    return {c: tables.frequency(c) for c in tables.chars()}


def build(discriminator: Path, generator: Path, out: Path, data: Path, base_dir: Path, holdout: int = 1000,
          name: str | None = None) -> dict:
    """Write the zero-shot bundle; its manifest's ``provenance`` is returned."""
    from training.data.pair_files import write_pairs
    from training.data.splits import dev_pairs
    from training.fitting import fit

    from .export import Evidence, load_pair, update_bundle, write_bundle

    t0 = time.time()

    def step(what: str) -> None:
        print(f"[{time.time() - t0:5.0f} s] {what}", flush=True)

    base = Bundle.load(base_dir)
    step(f"loading the pair ({discriminator}, {generator})")
    disc, gen, vocab = load_pair(discriminator, generator)
    provenance = {"source": {"discriminator": discriminator.name, "generator": generator.name},
                  "shape": {"discriminator": shape_of(disc.config), "generator": shape_of(gen.config)},
                  "evidence_from": {"name": base.manifest.name, "version": base.manifest.version},
                  "ranker_fitted_on": f"the dev split (the first {holdout} sighan_train pairs)"}
    evidence = Evidence(lm=base.file(LM_DIR) if base.file(LM_DIR).is_dir() else None,
                        candidates=base.file(CANDIDATES_DIR) if base.file(CANDIDATES_DIR).is_dir() else None)
    step("exporting the networks to ONNX (checked against torch, with int8 copies) and the tables")
    write_bundle(disc, gen, vocab, out, name=name or out.name, char_freq=char_counts(base), provenance=provenance,
                 half=False, evidence=evidence,
                 max_seq_len=min(128, disc.config.max_position_embeddings))
    pairs = dev_pairs(data, holdout)
    step(f"the RTD floor: at most {LOOKED_AT:.0%} of the dev split's characters looked at")
    floor = rtd_floor_for(out, [src for src, _ in pairs])
    update_bundle(out, Evidence(), corrector_defaults={"rtd_floor": floor})
    step(f"  rtd_floor {floor:g}")
    with tempfile.TemporaryDirectory(prefix="csc-pretrained-") as tmp:
        dev, counted = Path(tmp) / "dev_split.tsv", Path(tmp) / "none.tsv"
        write_pairs(dev, pairs)
        write_pairs(counted, [])
        ranker = Path(tmp) / "ranker.json"
        # the dev split's pairs are in none of the base bundle's counts: they are fitted on as --synthetic-pairs
        # are (not counted leave-one-out), and no counted real pair joins them
        step(f"fitting the ranker and its threshold on the dev split ({holdout:,} pairs, at most {MAX_ROWS:,} rows)")
        fit.main(["--model", str(out), "--data", str(data), "--holdout", str(holdout), "--steps", STEPS,
                  "--train-pairs", str(counted), "--synthetic-pairs", str(dev), "--out", str(ranker),
                  "--report", str(Path(tmp) / "fit.json"), "--max-rows", str(MAX_ROWS), "--shortlist", str(SHORTLIST),
                  "--try-shortlists", str(SHORTLIST)])
        update_bundle(out, Evidence(ranker=ranker))
    step("done")
    return provenance


def main(argv: list[str] | None = None) -> int:
    from training.data.location import default_data

    ap = argparse.ArgumentParser(prog="python -m training.bundle.from_pretrained", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrained", type=Path, help="a folder with discriminator/ and generator/ (HFL's layout)")
    ap.add_argument("--discriminator", type=Path, help="the discriminator's directory (instead of --pretrained's)")
    ap.add_argument("--generator", type=Path, help="the generator's directory (instead of --pretrained's)")
    ap.add_argument("--out", type=Path, required=True, help="the bundle folder to write (replaced if present)")
    ap.add_argument("--data", type=Path, help="the shared data folder, for the dev split (default: $CSC_DATA or "
                                              "../shared/data)")
    ap.add_argument("--base", type=Path, help="the bundle whose LM and candidate table are used (default: the "
                                              "default bundle)")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs of the dev split")
    ap.add_argument("--name", help="the bundle's name (default: OUT's folder name)")
    a = ap.parse_args(argv)
    try:
        disc, gen = pair_dirs(a.pretrained, a.discriminator, a.generator)
        if a.base is None:
            from corrector.model_path import default_model_path

            a.base = default_model_path()
        provenance = build(disc, gen, a.out, a.data or default_data(), a.base, a.holdout, a.name)
    except (CorrectorError, ValueError) as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    shape = provenance["shape"]["discriminator"]
    print(f"wrote {a.out}: discriminator {shape['layers']} layers of {shape['hidden']}, ranker and threshold fitted "
          "on the dev split")
    return 0


if __name__ == "__main__":
    sys.exit(main())
