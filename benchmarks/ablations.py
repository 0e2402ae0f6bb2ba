"""Ablation table: the decoder with each group of evidence removed, refitted and re-thresholded on dev.

    python benchmarks/ablations.py --model data/electra_models/default --data ../shared/data \\
        --cache runs/ranker_cache_gpu7kb --lm-folds runs/lm/dom10_folds --blend --sample 0.2 --out runs/ablations.json

Every row refits the ranker without that group's features (and the products that use them) on the same training
rows (the cached tables of ``training.fitting.fit``: pass the cache of the run that fitted the bundle's ranker), with
``--blend`` rescales its two blocks of weights on the dev split's rows as ``training.fitting.fit --blend-on-dev`` does,
keeps the bundle's vetoed pairs, and picks its threshold on the dev split (best sentence correction F1 with at most
``--max-fpr`` of the dev's error-free sentences changed, on the uncalibrated probability); then reports the dev split
(with ``--lm-folds``, each dev pair decoded with the LM fold that never counted it) and SIGHAN-15
(``csc/sighan15_test.tsv``, never used for a choice). "all features, refitted here" is the reference the other
refitted rows compare with; the bundle as shipped (its calibration and threshold) and "networks only" (the bundle's
own ``--no-lm`` ranker) are the first rows. "LM only" drops the networks' features (generator log-probability, RTD)
and the generator's candidates. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector import Corrector
from corrector.features import CHEAP, COL, FEATURES
from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.data.splits import dev_pairs, train_pairs
from training.fitting.conditional_logit import blended, fit_blend, fit_conditional_logit
from training.fitting.crossfit import Folds
from training.fitting.evaluate import run
from training.fitting.sweep import choose_threshold, sweep
from training.fitting.table import Table, extract, load_table, save_table

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
GRID = [round(0.3 + 0.05 * i, 2) for i in range(13)]  # 0.3 ... 0.9, as training.fitting.ranker's first choice


def scores(fix: Corrector | Folds, pairs: list[tuple[str, str]], **settings) -> dict:
    m = run(fix, pairs, **settings)
    sc = m["sentence_correction"]
    return {"p": sc["precision"], "r": sc["recall"], "f1": sc["f1"], "fpr": m["false_positive_rate"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, default=Path("data/electra_models/default"))
    ap.add_argument("--data", type=Path, default=default_data())
    ap.add_argument("--cache", type=Path, required=True, help="training.fitting.fit's --cache folder (made if absent)")
    ap.add_argument("--max-fpr", type=float, default=0.08)
    ap.add_argument("--lm-folds", type=Path, help="cross-fitting LM folds (training.evidence.char_lm --fold-out): dev decoded "
                    "with the fold that never counted each pair, as the bundle's LM counts the dev targets")
    ap.add_argument("--blend", action="store_true", help="rescale each refit's blocks on dev rows (--blend-on-dev)")
    ap.add_argument("--sample", type=float, default=1.0, help="refit on this share of the training sites (speed)")
    ap.add_argument("--out", type=Path, help="JSON of every row")
    ap.add_argument("--groups", nargs="*", choices=list(GROUPS), default=list(GROUPS), metavar="GROUP",
                    help="the feature groups to remove one at a time (default: all of %(choices)s)")
    a = ap.parse_args(argv)
    fix = Corrector.load(a.model, device="cpu")
    fitted = fix.ranker
    if not fitted.meta.get("fitted"):
        raise SystemExit("the bundle has no fitted ranker.json (run training.fitting.fit first)")
    hidden = int(fitted.meta.get("hidden", 0))
    dev, test = dev_pairs(a.data), read_pairs(a.data / "csc" / "sighan15_test.tsv")
    dev_fix = Folds.over(fix, a.lm_folds, a.data) if a.lm_folds else Folds([fix])
    cached = sorted(a.cache.glob("train_rows_s*.npz"))  # training.fitting.fit's rows (any shortlist size)
    path = a.cache / f"train_rows_s{fix.config.shortlist}.npz"
    if cached:
        rows = load_table(cached[-1])
    else:
        rows = extract(fix, train_pairs(a.data), shortlist=fix.config.shortlist)
        a.cache.mkdir(parents=True, exist_ok=True)
        save_table(rows, path)
    if a.sample < 1.0:
        rows = rows.subset(np.random.default_rng(0).random(len(rows.erroneous)) < a.sample)
    dev_rows = Table.concat([extract(f, ps, shortlist=fix.config.shortlist, leave_one_out=False)
                             for f, ps in dev_fix.groups(dev)]) if a.blend else None
    out = []

    def row(name: str, settings: dict, fix: Corrector = fix, dev_fix: Folds = dev_fix) -> None:
        d, t = scores(dev_fix, dev, **settings), scores(fix, test, **settings)
        out.append({"decoder": name, "dev": d, "sighan15": t, **settings})
        print(f"| {name} | {d['f1']:.3f} | {d['fpr']:.3f} | {t['p']:.3f} | {t['r']:.3f} | {t['f1']:.3f} | {t['fpr']:.3f} |",
              flush=True)

    def refitted(name: str, group: tuple[str, ...]) -> None:
        products = [p for p in fitted.scorer.linear if "*" in p and not set(p.split("*")) & set(group)]
        feats = [f for f in FEATURES if f not in group] + products
        scorer = fit_conditional_logit(rows, feats, hidden=hidden)
        if dev_rows is not None:
            d = dev_rows
            if group:  # the dev rows as this scorer sees them: the removed features read as 0
                d = replace(dev_rows, X=dev_rows.X.copy())
                d.X[:, [COL[g] for g in group]] = 0.0
            scorer = blended(scorer, fit_blend(d, scorer))
        scorer = replace(scorer, veto=fitted.scorer.veto)
        short = {k: v for k, v in fitted.shortlist.items() if k in feats and k in CHEAP}
        ranker = replace(fitted, scorer=scorer, shortlist=short)
        extra = {"top_k": 0} if "gen_lp" in group else {}
        th = choose_threshold(sweep(dev_fix.with_ranker(ranker), dev, GRID, **extra), a.max_fpr)["threshold"]
        row(name, {"threshold": th, **extra}, fix.with_ranker(ranker), dev_fix.with_ranker(ranker))

    print("| decoder | dev F1 | dev FPR | SIGHAN-15 P | R | F1 | FPR |\n|---|---:|---:|---:|---:|---:|---:|", flush=True)
    row("the bundle as shipped (networks + LM + all features, calibrated, its threshold)", {})
    row("networks only (--no-lm, the bundle's)", {"use_lm": False})
    refitted("all features, refitted here (the reference for the rows below)", ())
    for name in a.groups:
        group = GROUPS[name]
        if group == ("lm_gain",):
            continue  # the networks-only row
        refitted("LM only (no network features or candidates)" if "gen_lp" in group else f"without {name}", group)
    if a.out:
        a.out.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
