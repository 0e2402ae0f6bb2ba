"""Ablation table: the decoder with each group of evidence removed, refitted and re-thresholded on dev.

    python benchmarks/ablations.py --model data/electra_models/default --data ../shared/data \\
        --cache runs/ranker_cache --out runs/ablations.json

Every row refits the ranker without that group's features on the same training rows (the cached
tables of ``training.ranker``), picks its threshold on the dev split (best sentence correction F1 with
at most ``--max-fpr`` of the dev's error-free sentences changed), and then reports the dev split and
SIGHAN-15 (``csc/sighan15_test.tsv``, never used for a choice). "networks only" is the bundle's own
``--no-lm`` ranker; "LM only" drops the networks' features (generator log-probability, RTD) and the
generator's candidates. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.features import CHEAP, FEATURES
from training.csc_data import read_pairs
from training.metrics import csc_metrics
from training.ranker import choose_threshold, extract, fit_conditional_logit, load_table, save_table, sweep
from training.splits import dev_pairs, train_pairs

GROUPS = {
    "the networks (generator, RTD)": ("gen_lp", "rtd"),
    "the LM": ("lm_gain",),
    "pinyin/shape similarity": ("pinyin", "shape"),
    "the confusion prior": ("confusions",),
    "character frequency": ("freq",),
    "dictionary words": ("word",),
    "name-likeness": ("name",),
    "word forms kept in real corrected text": ("seen", "seen_max", "kept_word"),
    "two-character word pairs": ("pair",),
}
GRID = [0.5, 0.55, 0.6, 0.65, 0.7]


def scores(fix: Corrector, pairs: list[tuple[str, str]], **settings) -> dict:
    preds = [c.target for c in fix.correct_batch([s for s, _ in pairs], **settings)]
    m = csc_metrics((s, t, p) for (s, t), p in zip(pairs, preds))
    sc = m["sentence_correction"]
    return {"p": sc["precision"], "r": sc["recall"], "f1": sc["f1"], "fpr": m["false_positive_rate"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=Path("data/electra_models/default"))
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--cache", type=Path, required=True, help="training.ranker's --cache folder (made if absent)")
    ap.add_argument("--max-fpr", type=float, default=0.08)
    ap.add_argument("--sample", type=float, default=1.0, help="refit on this share of the training sites (speed)")
    ap.add_argument("--out", type=Path, help="JSON of every row")
    ap.add_argument("--groups", nargs="*", choices=list(GROUPS), default=list(GROUPS), metavar="GROUP",
                    help="the feature groups to remove one at a time (default: all of %(choices)s)")
    a = ap.parse_args(argv)
    fix = Corrector.load(a.model, device="cpu")
    fitted = fix.ranker
    if not fitted.meta.get("fitted"):
        raise SystemExit("the bundle has no fitted ranker.json (run training.ranker first)")
    hidden = int(fitted.meta.get("hidden", 0))
    dev, test = dev_pairs(a.data), read_pairs(a.data / "csc" / "sighan15_test.tsv")
    cached = sorted(a.cache.glob("train_rows_s*.npz"))  # training.ranker's rows (any shortlist size)
    path = a.cache / f"train_rows_s{fix.config.shortlist}.npz"
    if cached:
        rows = load_table(cached[-1])
    else:
        rows = extract(fix, train_pairs(a.data), shortlist=fix.config.shortlist)
        a.cache.mkdir(parents=True, exist_ok=True)
        save_table(rows, path)
    if a.sample < 1.0:
        rows = rows.subset(np.random.default_rng(0).random(len(rows.erroneous)) < a.sample)
    out = []

    def row(name: str, settings: dict) -> None:
        d, t = scores(fix, dev, **settings), scores(fix, test, **settings)
        out.append({"decoder": name, "dev": d, "sighan15": t, **settings})
        print(f"| {name} | {d['f1']:.3f} | {d['fpr']:.3f} | {t['p']:.3f} | {t['r']:.3f} | {t['f1']:.3f} | {t['fpr']:.3f} |",
              flush=True)

    print("| decoder | dev F1 | dev FPR | SIGHAN-15 P | R | F1 | FPR |\n|---|---:|---:|---:|---:|---:|---:|", flush=True)
    row("networks + LM + all features (default)", {})
    row("networks only (--no-lm)", {"use_lm": False})
    for name in a.groups:
        group = GROUPS[name]
        if group == ("lm_gain",):
            continue  # the row above
        products = [p for p in fitted.scorer.linear if "*" in p and not set(p.split("*")) & set(group)]
        feats = [f for f in FEATURES if f not in group] + products
        scorer = fit_conditional_logit(rows, feats, hidden=hidden)
        short = {k: v for k, v in fitted.shortlist.items() if k in feats and k in CHEAP}
        fix.ranker = replace(fitted, scorer=scorer, shortlist=short)
        extra = {"top_k": 0} if "gen_lp" in group else {}
        th = choose_threshold(sweep(fix, dev, GRID, **extra), a.max_fpr)["threshold"]
        row("LM only (no network features or candidates)" if "gen_lp" in group else f"without {name}",
            {"threshold": th, **extra})
        fix.ranker = fitted
    if a.out:
        a.out.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
