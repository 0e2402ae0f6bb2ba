"""How much better could the ranker do with the evidence it has? A ceiling from fitting it on the target domains.

    python benchmarks/ranker_ceiling.py --lemon ../shared/data/csc/lemon_dev --dev runs/dev_split.tsv

The dev split: ``python -m training.data.splits --data ../shared/data --out runs/dev_split.tsv``. Every site of the
sets is scored by the bundle's public stages (its LM, its candidates, the first round of decide), then:

1. **The blend** (``training.fitting.conditional_logit.fit_blend``: one factor on the networks' weights, one on the rest) fitted
   on the dev split, on the four lemon_dev domains and on both. Factors close to each other say the blend chosen on
   the dev split is also the one what users write asks for.
2. **A ranker fitted on native writers' text** (an oracle: never shipped, lemon_dev is for choosing only): for each
   lemon_dev domain, conditional logits (linear, and with 8 hidden units) fitted on the other three domains and the
   dev split, with every feature and product of the shipped ranker. Compared with the shipped ranker at the same
   number of wrong first-round edits (an edit at a correct character, or another character than the gold) as the
   shipped ranker makes at its threshold: how many more errors the best candidate fixes. If a ranker fitted on the
   very domains gains little, recall is limited by the evidence (the networks, the LM, the candidates), not by how
   the ranker weighs it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector import Corrector
from corrector.features import FEATURES, Rows
from corrector.rank import Scorer, best_candidates, choice_probs
from training.data.csc_data import read_pairs
from training.fitting.conditional_logit import blended, fit_blend, fit_conditional_logit
from training.fitting.ranker import PRODUCTS
from training.fitting.table import Table, extract

DOMAINS = ("enc", "mec", "cot", "gam")


def first_round(t: Table, scorer: Scorer) -> tuple[np.ndarray, np.ndarray]:
    """Per site: the probability of its best candidate under ``scorer`` (the decoder's ``choice_probs`` and
    ``best_candidates``) and whether it is the gold of an erroneous character (at a correct character the gold is
    the keep row, so every candidate there is a wrong edit)."""
    n = len(t.erroneous)
    rows = Rows(t.site, np.zeros(len(t.site), dtype=np.int64), t.X)
    best_row, best_p = best_candidates(rows, choice_probs(rows, scorer, n), n, np.ones(n, dtype=bool))
    return best_p, (best_row >= 0) & t.label[np.maximum(best_row, 0)] & t.erroneous


def right_at(p: np.ndarray, right: np.ndarray, wrong_budget: int) -> int:
    """Right edits among the most probable ones, taken until ``wrong_budget`` wrong ones are made."""
    order = np.argsort(-p, kind="stable")
    wrong = np.cumsum(~right[order])
    k = int(np.searchsorted(wrong, wrong_budget, side="right"))
    return int(right[order][:k].sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lemon", type=Path, required=True, help="the lemon_dev folder ({enc,mec,cot,gam}.tsv)")
    ap.add_argument("--dev", type=Path, required=True, help="the dev split (training.data.splits --out)")
    ap.add_argument("--model", default=None, help="bundle directory (default: the bundled default)")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    fix = Corrector.load(a.model, threads=a.threads)
    sets = {k: read_pairs(a.lemon / f"{k}.tsv") for k in DOMAINS}
    sets["dev"] = read_pairs(a.dev)
    tables = {k: extract(fix, pairs, shortlist=fix.config.shortlist, leave_one_out=False) for k, pairs in sets.items()}
    shipped = fix.ranker.pick(True)
    old = next((b["with_lm"] for b in fix.ranker.meta.get("blend_on_dev", [])), {"networks": 1.0, "rest": 1.0})
    base = blended(shipped, {block: 1.0 / f for block, f in old.items()})  # the fit before its blend
    print("| blend fitted on | networks | rest |\n|---|---:|---:|")
    for name, keys in (("dev split", ["dev"]), ("lemon_dev", list(DOMAINS)), ("both", [*DOMAINS, "dev"])):
        f = fit_blend(Table.concat([tables[k] for k in keys]), base, ("networks",))
        print(f"| {name} | {f['networks']:.3f} | {f['rest']:.3f} |")
    threshold = shipped.uncalibrate(fix.ranker.threshold)
    names = [*FEATURES, *PRODUCTS]
    print("\n| domain | error characters at sites | shipped: right / wrong first-round edits | fitted on the others, linear | "
          "with 8 hidden units |\n|---|---:|---:|---:|---:|")
    for held in DOMAINS:
        t = tables[held]
        p, right = first_round(t, shipped)
        made = p > threshold
        wrong = int((made & ~right).sum())
        fits = Table.concat([tables[k] for k in tables if k != held])
        got = [right_at(*first_round(t, fit_conditional_logit(fits, names, hidden=h)), wrong)
               for h in (0, 8)]
        print(f"| {held} | {int(t.erroneous.sum())} | {int((made & right).sum())} / {wrong} | {got[0]} | {got[1]} |",
              flush=True)


if __name__ == "__main__":
    main()
