"""Candidate recall: how often the gold correction of an erroneous character is among the decoder's candidates.

    python benchmarks/candidate_recall.py --data ../shared/data/csc/lemon_dev/*.tsv ../shared/data/csc/sighan15_test.tsv

For every character whose target differs from its source, per file:
- ``site``: the character is a site (editable and not protected);
- ``all``: the gold is among all its candidates (every candidate-table entry and the generator's top-k);
- ``shortlist``: the gold is among the choices the ranker scores (the table's shortlist, the generator's top-k,
  word pairs), i.e. the edit is reachable at all;
- ``first``: the gold is the ranker's most probable candidate there in the first round (above the threshold
  or not: what a lower threshold could reach);
- ``fixed``: the decoder writes the gold there (any round, at the bundle's threshold).
Each share is of all error characters, so the columns read as a funnel: where recall is lost. Misses are tallied
by pair (source -> gold) so the commonest ones can be read off. Runs the public stages (prepare, score, decide) of
the bundle with its default settings.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import _checkout  # noqa: F401  (training/ and service/ are imported from the checkout)
import numpy as np

from corrector import Corrector
from corrector.rank import best_candidates
from corrector.stages import Decided, Scored
from training.data.csc_data import read_pairs


@dataclass(frozen=True)
class GoldView:
    """One batch through the bundle's public stages, with what each of its sites should be."""

    fix: Corrector
    top_k: int  # the generator's proposals per site in force
    scored: Scored
    decided: Decided
    text: list[int]  # per site: the index of its text in the pairs ...
    pos: list[int]  # ... its position in that text ...
    source: list[str]  # ... the character written there ...
    gold: list[str]  # ... and the target's
    best_row: np.ndarray  # per site: the first round's most probable candidate row (-1: none) ...
    best_p: np.ndarray  # ... and its probability

    @cached_property
    def all_of(self) -> list[set[str]]:
        """Per site: the characters among all its candidates (no shortlist cut; computed when first asked for)."""
        sites = self.scored.sites
        site_all, vid_all, _, _ = self.fix.evidence.shortlist(sites, {}, 1_000_000, self.top_k, {})
        return _choices(site_all, vid_all, len(sites), self.fix.vocab)

    def reached(self, s: int, choices: list[set[str]]) -> bool:
        """The gold of site ``s`` is among ``choices[s]``, or is the character as the model reads it (a traditional
        character's simplified view)."""
        return self.gold[s] in choices[s] or self.gold[s] == self.scored.sites.src[s]


def gold_views(fix: Corrector, pairs: list[tuple[str, str]], batch_texts: int = 256) -> Iterator[GoldView]:
    """Every batch of ``pairs`` through the bundle's public stages (prepare, score, decide), default settings."""
    for b in range(0, len(pairs), batch_texts):
        part = pairs[b : b + batch_texts]
        prepared = fix.prepare([s for s, _ in part])
        for scored in fix.score(prepared):
            sites = scored.sites
            text = [b + scored.chunks[c].text_index for c in sites.chunk.tolist()]
            pos = [scored.chunks[c].start + i for c, i in zip(sites.chunk.tolist(), sites.char.tolist())]
            decided = fix.decide(scored, prepared.settings)
            best_row, best_p = best_candidates(scored.rows, decided.first, len(sites), np.ones(len(sites), dtype=bool))
            yield GoldView(fix, prepared.settings.top_k, scored, decided, text, pos,
                           [pairs[t][0][i] for t, i in zip(text, pos)], [pairs[t][1][i] for t, i in zip(text, pos)],
                           best_row, best_p)


def candidate_recall(fix: Corrector, pairs: list[tuple[str, str]], batch_texts: int = 256) -> dict:
    errors = sum(a != g for s, t in pairs for a, g in zip(s, t))
    at_site = in_all = in_short = first = fixed = 0
    missed_all: Counter[str] = Counter()
    missed_short: Counter[str] = Counter()
    for v in gold_views(fix, pairs, batch_texts):
        rows = v.scored.rows
        short_of = _choices(rows.site, rows.vid, len(v.gold), fix.vocab)
        for s, (source, gold) in enumerate(zip(v.source, v.gold)):
            if source == gold:
                continue
            at_site += 1
            if v.reached(s, v.all_of):
                in_all += 1
            else:
                missed_all[source + gold] += 1
            if v.reached(s, short_of):
                in_short += 1
            else:
                missed_short[source + gold] += 1
            first += int(v.best_row[s] >= 0 and fix.vocab[int(rows.vid[v.best_row[s]])] == gold)
            fixed += int(s in v.decided.chosen and fix.vocab[int(rows.vid[v.decided.chosen[s][0]])] == gold)
    return {"error_chars": errors, "at_a_site": round(at_site / max(errors, 1), 4),
            "gold_in_all": round(in_all / max(errors, 1), 4), "gold_in_shortlist": round(in_short / max(errors, 1), 4),
            "gold_first": round(first / max(errors, 1), 4), "gold_written": round(fixed / max(errors, 1), 4),
            "top_missed_all": missed_all.most_common(15), "top_missed_shortlist": missed_short.most_common(15)}


def _choices(site: np.ndarray, vid: np.ndarray, n: int, vocab: list[str]) -> list[set[str]]:
    out: list[set[str]] = [set() for _ in range(n)]
    for s, v in zip(site.tolist(), vid.tolist()):
        out[s].add(vocab[v])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, nargs="+", required=True, help="source<TAB>target files")
    ap.add_argument("--model", default=None, help="bundle directory (default: the bundled default)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="write the report as JSON here too")
    a = ap.parse_args()
    fix = Corrector.load(a.model, threads=a.threads)
    report = {}
    print("| file | error chars | at a site | gold among all candidates | gold among the shortlist | gold ranked first "
          "| gold written |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for path in a.data:
        r = candidate_recall(fix, read_pairs(path))
        report[path.name] = r
        print(f"| {path.name} | {r['error_chars']} | {r['at_a_site']:.1%} | {r['gold_in_all']:.1%} | "
              f"{r['gold_in_shortlist']:.1%} | {r['gold_first']:.1%} | {r['gold_written']:.1%} |")
    for name, r in report.items():
        print(f"\n{name}: commonest misses (all candidates): "
              + ", ".join(f"{p[0]}→{p[1]} {n}" for p, n in r["top_missed_all"]))
    if a.out:
        a.out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
