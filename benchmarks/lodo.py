"""Choose decoding settings without fooling ourselves: leave one native dev domain out.

    python benchmarks/lodo.py --grid rtd_floor=0,0.001 --thresholds 0.6,0.67,0.75 [--model DIR] [--data DIR]

Every point of ``--grid`` (settings a call can set, each with its values; several settings: every combination,
in order, the last varying fastest) scores the five native dev domains (``training.data.native_dev``: the four
lemon_dev domains and cscd_ns_dev) and the dev split once, through the Corrector's public stages, and decides them
at each of ``--thresholds`` (default: the bundle's). Then, for each domain in turn, the point is chosen on the other
four and the dev split alone (the most mean strict sentence correction F1 among the points that change at most
``--max-fpr-each`` of each choosing LEMON domain's correct sentences, ``--max-fpr-cscd-ns`` of cscd_ns_dev's;
points within ``--tie`` of the best count as equal, and the later one wins: list the cheaper values last) and the
held-out domain's F1 at that point is its figure (``--scores`` chooses again from an earlier run's report). The
headline is the mean of the five held-out figures. ``--domains`` takes fewer (the four LEMON ones reproduce the
earlier four-domain figures). The choice made on all the sets is then reported on the dev split and SIGHAN-15 (never chosen on) beside the
bundle as it is. Writes a JSON report with ``--report``.
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)

from training.data.csc_data import read_pairs
from training.data.location import default_data
from training.data.native_dev import CSCD_NS_FPR_CAP, DOMAINS, LEMON_FPR_CAP, domain_pairs, fpr_cap
from training.data.splits import dev_pairs
from training.fitting.evaluate import run
from training.fitting.sweep import sweep


def parse_grid(items: list[str]) -> list[dict[str, float]]:
    axes = []
    for item in items:
        name, _, values = item.partition("=")
        axes.append([(name, float(v)) for v in values.split(",")])
    return [dict(point) for point in itertools.product(*axes)]


def choose(scores: dict[str, list[dict]], sets: list[str], max_fpr: float, tie: float, max_fpr_dev: float = 0.08,
           max_fpr_cscd_ns: float = CSCD_NS_FPR_CAP) -> int:
    """Index of the grid point with the most mean F1 over ``sets`` (the later of near-ties) within the FPR caps
    (``max_fpr`` on each LEMON domain, ``max_fpr_cscd_ns`` on cscd_ns_dev, ``max_fpr_dev`` on the dev split, as the
    recipe's threshold stage)."""
    n = len(next(iter(scores.values())))
    cap = {s: max_fpr_dev if s == "dev_split" else fpr_cap(s, max_fpr, max_fpr_cscd_ns) for s in sets}
    ok = [i for i in range(n) if all(scores[s][i]["fpr"] <= cap[s] for s in sets)] or list(range(n))
    mean = {i: sum(scores[s][i]["f1"] for s in sets) / len(sets) for i in ok}
    best = max(mean.values())
    return max(i for i in ok if mean[i] >= best - tie)


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", nargs="+", required=True, help="SETTING=V1,V2,... (decoding settings of a call)")
    ap.add_argument("--thresholds", default=None, help="comma-separated confidence thresholds (default: the bundle's)")
    ap.add_argument("--model", type=Path, default=None, help="bundle (default: the shipped one)")
    ap.add_argument("--data", type=Path, default=default_data(), help="the data folder")
    ap.add_argument("--domains", default=",".join(DOMAINS), help="the native dev domains, comma-separated")
    ap.add_argument("--max-fpr-each", type=float, default=LEMON_FPR_CAP, help="FPR cap on each choosing LEMON domain")
    ap.add_argument("--max-fpr-cscd-ns", type=float, default=CSCD_NS_FPR_CAP, help="FPR cap on cscd_ns_dev")
    ap.add_argument("--max-fpr-dev", type=float, default=0.08, help="FPR cap on the dev split")
    ap.add_argument("--scores", type=Path, default=None,
                    help="a report of an earlier run: choose again from its scores, decoding nothing but SIGHAN-15")
    ap.add_argument("--tie", type=float, default=0.002)
    ap.add_argument("--report", type=Path, default=None)
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    from corrector import Corrector

    fix = Corrector.load(args.model)
    thresholds = [float(t) for t in args.thresholds.split(",")] if args.thresholds else [fix.threshold()]
    points = parse_grid(args.grid)
    grid = [{**p, "threshold": t} for p in points for t in thresholds]
    domains = tuple(d for d in args.domains.split(",") if d)
    if unknown := set(domains) - set(DOMAINS):
        ap.error(f"unknown domains {sorted(unknown)}; known: {', '.join(DOMAINS)}")
    sets = domain_pairs(args.data, domains)
    sets["dev_split"] = dev_pairs(args.data)
    scores: dict[str, list[dict]] = {name: [] for name in sets}
    if args.scores:
        earlier = json.loads(args.scores.read_text(encoding="utf-8"))
        if earlier["grid"] != grid:
            ap.error(f"{args.scores} was run on another grid: {earlier['grid']}")
        scores, points = earlier["scores"], []
    for point in points:
        for name, pairs in sets.items():  # networks and features once, each threshold decided on them
            scores[name] += [{"f1": r["sentence_correction"]["f1"], "fpr": r["false_positive_rate"]}
                             for r in sweep(fix, pairs, thresholds, **point)]
        for k in range(len(thresholds), 0, -1):
            print(grid[len(scores["dev_split"]) - k],
                  " ".join(f"{n} {scores[n][-k]['f1']:.3f}/{scores[n][-k]['fpr']:.3f}" for n in sets), flush=True)
    held = {}
    caps = (args.max_fpr_each, args.tie, args.max_fpr_dev, args.max_fpr_cscd_ns)
    for d in domains:
        i = choose(scores, [s for s in sets if s != d], *caps)
        held[d] = {"chosen": grid[i], "f1": scores[d][i]["f1"], "fpr": scores[d][i]["fpr"]}
    headline = sum(h["f1"] for h in held.values()) / len(held)
    final = choose(scores, list(sets), *caps)
    sighan = read_pairs(args.data / "csc" / "sighan15_test.tsv")
    test = {label: run(fix, sighan, 64, **point) for label, point in (("as shipped", {}), ("chosen", grid[final]))}
    print("| held-out domain | chosen on the others | F1 | FPR |\n|---|---|---:|---:|")
    for d, h in held.items():
        print(f"| {d} | {h['chosen']} | {h['f1']:.3f} | {h['fpr']:.3f} |")
    print(f"leave-one-domain-out mean F1 {headline:.3f} over {len(held)} domains; chosen on all {len(sets)} sets: "
          f"{grid[final]}")
    for label, r in test.items():
        print(f"SIGHAN-15 {label}: F1 {r['sentence_correction']['f1']:.3f} FPR {r['false_positive_rate']:.3f} "
              f"({r['sentences_per_s']} sent/s)")
    if args.report:
        args.report.write_text(json.dumps({"grid": grid, "scores": scores, "held_out": held, "lodo_mean_f1": headline,
                                           "chosen": grid[final], "sighan15_test": test}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
