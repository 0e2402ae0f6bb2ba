"""The ranker's weights, fitted on real training pairs, their threshold and calibration first chosen on the dev split.

1. The shortlist: a conditional logit over the cheap features of every candidate of the erroneous
   characters, so that the gold correction survives the cut to ``--shortlist`` candidates.
2. The ranker: a conditional logit over every feature of each site's choices (keep the character or
   take a shortlisted candidate), fitted twice, with and without the LM features; with the products of
   ``--products`` (``PRODUCTS``) and ``--hidden`` units tried as variants, and ``--blend-on-dev``.
3. The threshold: the probability above which an edit is applied, chosen on the dev split for the
   best sentence-level correction F1 with at most ``--max-fpr`` of the error-free dev sentences changed;
   the variant (products, hidden units, ``--try-shortlists``) with the best dev F1 is kept.
4. The calibration: a logistic map of each scorer's probabilities fitted on the dev edits
   (``calibration_map``), each threshold moved with it (the same edits made).

A step of ``training.fitting.fit`` (which writes ranker.json): ``add_arguments`` declares its flags, ``fit``
returns the weights. Training pairs are ``training.data.splits.train_pairs`` (never the dev split or a test
set); their rows (``table``) count the real pairs leave-one-out, or with ``--fit-count-folds`` each fold of the
pairs, and of the dev split, reads a candidate table that never counted its fold (``training.evidence.candidates
--folds``), so an essay's other sentences are not counted either, and no row's counts depend on its own label.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from corrector import Corrector
from corrector.features import CHEAP, COL, FEATURES
from corrector.rank import IDENTITY, RankerWeights

from ..data.csc_data import read_pairs
from ..data.splits import dev_pairs, train_pairs
from .calibration_map import fit_calibration
from .conditional_logit import blended, fit_blend, fit_conditional_logit, shortlist_recall
from .crossfit import Folds
from .reliability import reliability
from .sweep import choose_threshold, dev_edits, summarise, sweep
from .table import Table, extract, extract_cheap, load_table, save_table

# the products of two features the ranker weighs beside the features themselves (the default of --products)
PRODUCTS = ("lm_gain*pinyin", "lm_gain*shape", "lm_gain*rtd", "lm_gain*word", "lm_gain*error_rate", "gen_lp*rtd",
            "pinyin*shape", "rtd*pinyin", "rtd*error_rate")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The ranker step's flags (the bundle, the data, --holdout, --max-fpr and --fit-lm-folds are the command's)."""
    ap.add_argument("--shortlist", type=int, default=16, help="candidates per character in the training rows")
    ap.add_argument("--try-shortlists", default="8,16", help="shortlist sizes tried on dev (<= --shortlist)")
    ap.add_argument("--hidden", default="0", help="hidden-layer sizes to try (0 = linear); the best on dev is kept")
    ap.add_argument("--products", default=",".join(PRODUCTS),
                    help="products of two features added to the linear part: a comma list of a*b (default: "
                         "training.fitting.ranker.PRODUCTS), 'none', or 'none' and a list (each variant tried on dev)")
    ap.add_argument("--limit", type=int, default=0, help="use only this many training pairs (quick runs)")
    ap.add_argument("--max-rows", type=int, default=0, help="fit on at most about this many training rows: every "
                    "site with an error and a weighted sample of the others (Table.thinned); 0: all")
    ap.add_argument("--fit-lm", type=Path, help="character LM the training rows are scored with (default: the "
                    "bundle's); give one built without --in-domain when the bundle's LM counted the training pairs' "
                    "targets, so that a pair's own text is no evidence for itself. Dev always uses the bundle's")
    ap.add_argument("--fit-count-folds", type=Path, help="cross-fitting candidate tables (training.evidence.candidates "
                    "--folds K, the same K as --fit-lm-folds): each training pair and each dev pair reads the counts "
                    "of the real pairs less its fold's, instead of leave-one-out counts")
    ap.add_argument("--blend-on-dev", nargs="?", const="networks", default="",
                    help="rescale blocks of weights (networks, or networks,lm; the rest is one more) by factors fitted "
                         "on the dev split's rows (for networks fine-tuned on the ranker's training pairs: fit_blend)")
    ap.add_argument("--train-pairs", type=Path, help="fit on these source<TAB>target pairs instead of all the real "
                    "training pairs (e.g. a fold the networks were not fine-tuned on: training.data.splits --hold-out-fold)")
    ap.add_argument("--synthetic-pairs", type=Path, help="more source<TAB>target pairs to fit on beside the real "
                    "ones, drawn the way native writers slip (training.data.make_csc_data on sentences the networks were "
                    "not fine-tuned on): their confusions are not in the candidate table's counts, so their rows "
                    "are not counted leave-one-out")
    ap.add_argument("--cache", type=Path, help="folder for the extracted feature tables (reused when present)")
    ap.add_argument("--plot", type=Path, help="reliability plot PNG of the dev split, after the ranker step")


def fit(fix: Corrector, decoding: Folds, a: argparse.Namespace) -> tuple[RankerWeights, dict]:
    """The fitted weights (shortlist, both scorers, their thresholds and calibration, what was done in ``meta``)
    and the step's report. ``decoding``: ``fix`` over the LM folds (or ``fix`` alone), what the dev split is
    decoded with unless the counts are cross-fitted too."""
    t0 = time.time()
    dev_fix = Folds.over(fix, a.fit_lm_folds, a.data, a.fit_count_folds) if a.fit_count_folds else decoding
    fit = dev_fix  # the rows are scored as dev is, or with --fit-lm (never given with --fit-lm-folds)
    if a.fit_lm:
        lm_fix = fix.with_lm(a.fit_lm)
        fit = Folds.over(lm_fix, None, a.data, a.fit_count_folds) if a.fit_count_folds else Folds([lm_fix])

    def decode_with(weights: RankerWeights, **settings: Any) -> None:
        """``fix``, the rows' folds and dev's decode with ``weights`` (and these settings) from here on."""
        nonlocal fix, fit, dev_fix
        same = fit is dev_fix

        def derived(f: Corrector) -> Corrector:
            return f.with_ranker(weights).with_settings(**settings) if settings else f.with_ranker(weights)

        fix = derived(fix)
        dev_fix = replace(dev_fix, fixes=[derived(f) for f in dev_fix.fixes])
        fit = dev_fix if same else replace(fit, fixes=[derived(f) for f in fit.fixes])

    train = read_pairs(a.train_pairs) if a.train_pairs else train_pairs(a.data, a.holdout)
    if a.limit:
        train = train[: a.limit]
    dev = dev_pairs(a.data, a.holdout)
    loo = a.fit_count_folds is None  # the rows' counts: leave-one-out, or cross-fitted tables
    report: dict = {"train_pairs": len(train), "dev_pairs": len(dev), "shortlist": a.shortlist,
                    "row_counts": "leave-one-out" if loo else "cross-fitted folds"}
    tag = "" if loo else "_cf"  # cached tables of the two kinds never mix

    def cached(name: str, make) -> Table:
        path = a.cache / f"{name}.npz" if a.cache else None
        if path is not None and path.exists():
            return load_table(path)
        t = make()
        if path is not None:
            a.cache.mkdir(parents=True, exist_ok=True)
            save_table(t, path)
        return t

    # 1. shortlist weights, on every candidate of the erroneous characters
    synthetic = read_pairs(a.synthetic_pairs) if a.synthetic_pairs else []
    report["synthetic_pairs"] = len(synthetic)
    full = cached(f"train_cheap{tag}", lambda: Table.concat(
        [extract_cheap(f, ps, leave_one_out=loo) for f, ps in fit.groups(train)]
        + [extract_cheap(f, ps, leave_one_out=False) for f, ps in fit.groups(synthetic)]))  # no LM feature here
    short_w = fit_conditional_logit(full, list(CHEAP)).linear
    report["shortlist_weights"] = short_w
    report["candidate_recall_train"] = round(float(full.reachable.mean()), 4)
    report["shortlist_recall_train"] = shortlist_recall(full, short_w, [1, 4, 8, 16, 32])
    dev_full = Table.concat([extract_cheap(f, ps, leave_one_out=False) for f, ps in dev_fix.groups(dev)])
    report["candidate_recall_dev"] = round(float(dev_full.reachable.mean()), 4)
    report["shortlist_recall_dev"] = shortlist_recall(dev_full, short_w, [1, 4, 8, 16, 32])
    print(f"shortlist weights {short_w}; candidate recall dev {report['candidate_recall_dev']}, after the "
          f"shortlist {report['shortlist_recall_dev']} ({time.time() - t0:.0f} s)", flush=True)
    decode_with(replace(fix.ranker, shortlist=short_w))

    # 2. the ranker, with and without the LM, for each hidden size; 3. thresholds on dev
    rows = cached(f"train_rows_s{a.shortlist}{tag}", lambda: Table.concat(
        [extract(f, ps, shortlist=a.shortlist, leave_one_out=loo) for f, ps in fit.groups(train)]
        + [extract(f, ps, shortlist=a.shortlist, leave_one_out=False) for f, ps in fit.groups(synthetic)]))
    if a.max_rows and len(rows.X) > a.max_rows:
        report["rows_before_thinning"] = len(rows.X)
        rows = rows.thinned(a.max_rows)
    print(f"{len(rows.X):,} training rows" + (f" (of {report['rows_before_thinning']:,}: every site with an error, a "
          "weighted sample of the others)" if "rows_before_thinning" in report else "")
          + f" ({time.time() - t0:.0f} s)", flush=True)
    grid = [round(0.3 + 0.05 * i, 2) for i in range(13)]  # 0.3 ... 0.9
    best: dict | None = None
    parts = [p for p in a.products.split(",") if p]
    named = [p for p in parts if p != "none"]
    product_sets = ([[]] if "none" in parts or not named else []) + ([named] if named else [])
    variants = [(h, ps) for h in [int(x) for x in a.hidden.split(",")] for ps in product_sets if not (h and ps)]
    dev_rows = Table.concat([extract(f, ps, shortlist=a.shortlist, leave_one_out=False)
                             for f, ps in dev_fix.groups(dev)]) if a.blend_on_dev else None
    for h, ps in variants:
        with_lm = fit_conditional_logit(rows, list(FEATURES) + ps, hidden=h)
        no_lm = fit_conditional_logit(rows, [f for f in FEATURES if f != "lm_gain"]
                                      + [p for p in ps if "lm_gain" not in p], hidden=h)
        if dev_rows is not None:
            no_lm_rows = replace(dev_rows, X=dev_rows.X.copy())
            no_lm_rows.X[:, COL["lm_gain"]] = 0.0  # as the no-LM decoding scores them
            blocks = tuple(a.blend_on_dev.split(","))
            factors = {"with_lm": fit_blend(dev_rows, with_lm, blocks),
                       "no_lm": fit_blend(no_lm_rows, no_lm, tuple(b for b in blocks if b != "lm"))}
            with_lm, no_lm = blended(with_lm, factors["with_lm"]), blended(no_lm, factors["no_lm"])
            report.setdefault("blend", []).append({"hidden": h, "products": ps, **factors})
            print(f"blend on dev (networks, rest): with the LM {factors['with_lm']}, without {factors['no_lm']}",
                  flush=True)
        decode_with(RankerWeights(with_lm, no_lm, short_w, 0.5, 0.5, {}))
        for k in [int(x) for x in a.try_shortlists.split(",")]:
            trial: dict = {"hidden": h, "products": ps, "shortlist": k, "with_lm": with_lm, "no_lm": no_lm}
            for name, use_lm in (("lm", True), ("no_lm", False)):
                table = sweep(dev_fix, dev, grid, use_lm=use_lm, shortlist=k)
                trial[f"threshold_{name}"] = choose_threshold(table, a.max_fpr)["threshold"]
                trial[f"dev_{name}"] = summarise(table)
                print(f"hidden {h}, products {len(ps)}, shortlist {k}, dev {name}: " + "  ".join(
                    f"{r['threshold']}:{r['f1']:.3f}/{r['fpr']:.3f}" for r in trial[f"dev_{name}"])
                    + f" ({time.time() - t0:.0f} s)", flush=True)
            trial["dev_f1"] = max(r["f1"] for r in trial["dev_lm"] if r["threshold"] == trial["threshold_lm"])
            report.setdefault("trials", []).append({k: v for k, v in trial.items() if k not in ("with_lm", "no_lm")})
            if best is None or trial["dev_f1"] > best["dev_f1"]:
                best = trial
    assert best is not None
    decode_with(RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"], best["threshold_no_lm"]),
                shortlist=best["shortlist"])
    # 4. calibration: a logistic map of each scorer's edit probabilities on the dev edits (strictly increasing
    # from 0 to 1: calibration_map); the thresholds (chosen on the probabilities) move with it, the same edits made
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        p, right = dev_edits(dev_fix, dev, use_lm=use_lm)
        try:
            cal, params = fit_calibration(p, right)
        except ValueError as e:  # too few or one-sided edits: confidences stay the probabilities
            cal, params = IDENTITY, {"form": "identity", "why": str(e)}
        best[key] = replace(best[key], calibration=cal)
        report[f"calibration_{key}"] = params
        th = "threshold_lm" if use_lm else "threshold_no_lm"
        best[th] = float(best[key].calibrate(best[th]))
    print(f"calibration: logistic, with the LM {report['calibration_with_lm']}, without {report['calibration_no_lm']}",
          flush=True)
    decode_with(RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"], best["threshold_no_lm"]))
    report["reliability_dev"] = reliability(dev_fix, dev, a.plot)
    meta = {"fitted": True, "train_pairs": len(train), "synthetic_pairs": len(synthetic), "shortlist": best["shortlist"], "hidden": best["hidden"],
            "products": best["products"],
            **({"blend_on_dev": report["blend"]} if a.blend_on_dev else {}),
            "threshold_chosen_on": "dev split", "max_fpr": a.max_fpr,
            "rows_lm": _lm_summary(a.fit_lm_folds, folds=len(fit.fixes)) if a.fit_lm_folds else
            _lm_summary(a.fit_lm) if a.fit_lm else "the bundle's",
            "dev_lm": "cross-fitted folds (as the rows)" if a.fit_lm_folds else "the bundle's",
            "row_counts": report["row_counts"],
            "dev_counts": "the bundle's" if loo else "cross-fitted folds (as the rows)",
            "candidate_recall_dev": report["candidate_recall_dev"], "seconds": round(time.time() - t0),
            **({"rows": len(rows.X), "rows_before_thinning": report["rows_before_thinning"]}
               if "rows_before_thinning" in report else {})}
    print(f"hidden {best['hidden']}, shortlist {best['shortlist']}, threshold {best['threshold_lm']} "
          f"(no LM {best['threshold_no_lm']}) ({time.time() - t0:.0f} s)", flush=True)
    return RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"], best["threshold_no_lm"],
                         meta), report


def _lm_summary(lm: Path, folds: int = 0) -> dict:
    """What the training rows' LM was (no path): its order, pruning and in-domain lines, from its meta.json
    (fold0's for cross-fitting folds)."""
    meta_file = (lm / "fold0" if folds else lm) / "meta.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
    return {"name": lm.name, "folds": folds, **{k: meta.get(k) for k in ("order", "smoothing", "prune", "in_domain")}}
