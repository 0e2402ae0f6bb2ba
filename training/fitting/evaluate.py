"""Evaluate a model bundle on ``source<TAB>target`` pairs through the same Corrector users get.

    python -m training.fitting.evaluate --data ../shared/data/csc/sighan15_test.tsv --model data/electra_models/default
    python -m training.fitting.evaluate --data runs/csc/dev.tsv --model DIR --sweep --choose runs/defaults.json
    python -m training.fitting.evaluate --data runs/csc/dev.tsv --model DIR --sweep \
        --grid top_k=5,10 shortlist=4,8 --choose runs/defaults.json

Prints SIGHAN strict sentence-level detection/correction P/R/F1, character-level P/R/F1, the
false-positive rate on error-free sentences and sentences/s; writes a JSON report. ``--sweep``
varies the detection threshold (networks and features computed once, then each threshold decided) and
draws a precision-recall plot (``--grid`` adds other settings to the search); ``--choose`` writes the
settings with the best sentence correction F1 (pick them on a dev split, never on the test).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from corrector import Corrector
from corrector.bundle import DEVICES, PRECISIONS
from corrector.model_path import default_model_path

from ..data.csc_data import read_pairs
from ..data.location import default_data, require
from .crossfit import Folds
from .metrics import csc_metrics
from .sweep import choose_threshold, sweep

SWEEP = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def run(fixer: Corrector | Folds, pairs: list[tuple[str, str]], batch_size: int = 64, **options) -> dict:
    """Metrics of decoding the pairs in batches; with ``Folds`` (cross-fitting), each fold by its Corrector."""

    def decode(fix: Corrector, ps: list[tuple[str, str]]) -> list[str]:
        out: list[str] = []
        for s in range(0, len(ps), batch_size):
            out += [c.target for c in fix.correct_batch([p[0] for p in ps[s : s + batch_size]], **options)]
        return out

    t0 = time.perf_counter()
    preds = fixer.map(pairs, decode) if isinstance(fixer, Folds) else decode(fixer, pairs)
    dt = time.perf_counter() - t0
    report = csc_metrics((s, t, p) for (s, t), p in zip(pairs, preds))
    report["sentences_per_s"] = round(len(pairs) / dt, 1)
    return report


def thresholds(text: str) -> tuple[float, ...]:
    """'0.3,0.5' -> (0.3, 0.5), each in [0, 1]."""
    try:
        values = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not all(0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds are probabilities in [0, 1], got {text!r}")
    return values


def summary_line(r: dict) -> str:
    sd, sc, cc = r["sentence_detection"], r["sentence_correction"], r["char_correction"]
    return (f"sent det P/R/F1 {sd['precision']:.3f}/{sd['recall']:.3f}/{sd['f1']:.3f}  "
            f"sent cor P/R/F1 {sc['precision']:.3f}/{sc['recall']:.3f}/{sc['f1']:.3f}  "
            f"char cor F1 {cc['f1']:.3f}  FPR {r['false_positive_rate']:.3f}  {r['sentences_per_s']} sent/s")


def plot_sweep(rows: list[dict], png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for key, label in (("sentence_detection", "detection"), ("sentence_correction", "correction")):
        ax.plot([r[key]["recall"] for r in rows], [r[key]["precision"] for r in rows], "o-", label=label)
        for r in rows:
            ax.annotate(f"{r['threshold']:g}", (r[key]["recall"], r[key]["precision"]), fontsize=7)
    ax.set_xlabel("recall (sentence level)")
    ax.set_ylabel("precision")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def parse_settings(items: list[str]) -> dict:
    out: dict = {}
    for item in items:
        key, _, val = item.partition("=")
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def grid_combinations(items: list[str]) -> list[dict]:
    """["a=1,2", "b=x"] -> [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]; [] -> [{}]."""
    combos: list[dict] = [{}]
    for item in items:
        key, _, values = item.partition("=")
        parsed = [parse_settings([f"{key}={v}"])[key] for v in values.split(",")]
        combos = [{**c, key: v} for c in combos for v in parsed]
    return combos


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="source<TAB>target file")
    ap.add_argument("--model", type=Path, default=None, help="bundle directory (default: the bundled model)")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                    help="corrector settings, e.g. threshold=0.6 use_lm=false top_k=10")
    ap.add_argument("--limit", type=int, default=0, help="evaluate the first N pairs only")
    ap.add_argument("--device", default="cpu", choices=DEVICES)
    ap.add_argument("--precision", default="auto", choices=PRECISIONS,
                    help="CPU graphs: the bundle's recommendation (auto), float or int8-quantised")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--sweep", action="store_true", help="vary the threshold; plot precision-recall")
    ap.add_argument("--grid", nargs="*", default=[], metavar="KEY=V1,V2",
                    help="with --sweep: also search these settings (every combination)")
    ap.add_argument("--thresholds", type=thresholds, metavar="T1,T2,...",
                    help=f"with --sweep: the thresholds to try (default: {','.join(map(str, SWEEP))})")
    ap.add_argument("--choose", type=Path, help="with --sweep: write the best threshold (+ --set) as JSON")
    ap.add_argument("--max-fpr", type=float, default=1.0, help="with --choose: only thresholds under this FPR")
    ap.add_argument("--report", type=Path, help="JSON report path (default: print only)")
    ap.add_argument("--plot", type=Path, help="PNG path for the --sweep plot")
    ap.add_argument("--lm-folds", type=Path, help="cross-fitting LM folds (training.evidence.char_lm --fold-out): each pair "
                    "is decoded with the LM that did not count its fold, for the dev split when the bundle's LM "
                    "counted the training pairs' targets (--in-domain); needs --shared-data")
    ap.add_argument("--count-folds", type=Path, help="cross-fitting candidate tables (training.evidence.candidates --folds K): "
                    "each pair is decoded with the counts of the real pairs less its fold's (its essay-mates'); "
                    "with --lm-folds, the same K")
    ap.add_argument("--shared-data", type=Path, default=default_data(),
                    help="with --lm-folds or --count-folds: the folds' data")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    args = ap.parse_args(argv)
    if args.thresholds is not None and not args.sweep:
        ap.error("--thresholds needs --sweep")
    crossfit = args.lm_folds or args.count_folds
    if crossfit and args.sweep:
        ap.error("--lm-folds and --count-folds decode at the bundle's threshold; they do not combine with --sweep")

    require([args.data])
    pairs = read_pairs(args.data, args.limit)
    settings = parse_settings(args.set)
    folds = (Folds.load(args.model or default_model_path(), args.lm_folds, args.shared_data, device=args.device,
                        count_folds=args.count_folds, precision=args.precision, **settings) if crossfit else None)
    fixer = folds.fixes[0] if folds else Corrector.load(args.model, device=args.device, precision=args.precision,
                                                         **settings)
    meta = {"data": str(args.data), "model": fixer.name, "model_version": fixer.version, "settings": settings,
            "onnx": fixer.networks.precision}
    if folds:
        meta["lm"] = f"cross-fitted: {len(folds.fixes)} folds" if args.lm_folds else "the bundle's"
        meta["count_tables"] = f"cross-fitted: {len(folds.fixes)} folds" if args.count_folds else "the bundle's"
        report = {**meta, "threshold": fixer.config.threshold, **run(folds, pairs, args.batch_size)}
        print(summary_line(report))
    elif not args.sweep:
        report = {**meta, "threshold": fixer.config.threshold, **run(fixer, pairs, args.batch_size)}
        print(summary_line(report))
        print(json.dumps({k: report[k] for k in ("sentence_detection", "sentence_correction", "char_detection",
                                                   "char_correction", "false_positive_rate")}))
    else:
        rows = []
        for combo in grid_combinations(args.grid):
            variant = (Corrector.load(args.model, device=args.device, precision=args.precision, **{**settings, **combo})
                       if combo else fixer)
            t0 = time.perf_counter()
            table = sweep(variant, pairs, list(args.thresholds or SWEEP))  # networks and features once, then each threshold
            rate = round(len(pairs) / (time.perf_counter() - t0), 1)
            for r in table:
                r = {**r, "settings": combo, "sentences_per_s": rate}
                rows.append(r)
                print(f"{json.dumps(combo) if combo else ''} threshold {r['threshold']:<5} {summary_line(r)}")
        report = {**meta, "sweep": rows}
        best = choose_threshold(rows, args.max_fpr)
        chosen = {**settings, **best["settings"], "threshold": best["threshold"]}
        report["best"] = {"settings": chosen, "sentence_correction_f1": best["sentence_correction"]["f1"]}
        print(f"best on {args.data.name}: {json.dumps(chosen)} "
              f"(sentence correction F1 {best['sentence_correction']['f1']:.3f})")
        if args.plot:
            plot_sweep([r for r in rows if r["settings"] == best["settings"]], args.plot,
                       f"{fixer.name} on {args.data.name}")
        if args.choose:
            args.choose.write_text(json.dumps(chosen, indent=2) + "\n", encoding="utf-8")
    if args.report:
        args.report.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
