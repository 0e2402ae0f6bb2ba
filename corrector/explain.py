"""``explain``: each character's evidence and decision, read off the decide stage's statuses."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from corrector.features import COL, FEATURES
from corrector.guards import NAMED
from corrector.rank import MAX_ROUNDS
from corrector.stages import (
    APPLIED,
    BELOW_THRESHOLD,
    CAPPED,
    GUARDED,
    NO_CANDIDATES,
    NOT_EDITABLE,
    PROTECTED,
    UNSUSPECTED,
    Decided,
    Prepared,
)
from corrector.types import Candidate, CharExplanation


def explain_text(prepared: Prepared, decided: Sequence[Decided], vocab: Sequence[str], top_k: int,
                 index: int = 0) -> list[CharExplanation]:
    """One CharExplanation per character of text ``index``: its sites from ``decided``, the characters the
    discriminator does not suspect (below ``rtd_floor``), the rest protected (with the guard's name) or not
    editable."""
    out: dict[int, CharExplanation] = {}
    text = prepared.texts[index]
    for d in decided:
        out.update(_site_explanations(d, vocab, top_k, index, text))
        for k, i, rtd in d.scored.sites.unsuspected:
            site_chunk = d.scored.chunks[k]
            if site_chunk.text_index == index:
                why = f"kept: {UNSUSPECTED} (P(replaced) {rtd:.4f} is below rtd_floor {prepared.settings.rtd_floor:g})"
                pos = site_chunk.start + i
                out[pos] = CharExplanation(pos, text[pos], True, round(rtd, 4), [], why, 1.0)  # (nothing proposed)
    chars = []
    for i, c in enumerate(text):
        if i in out:
            chars.append(out[i])
            continue
        ch = next((k for k in prepared.chunks if k.text_index == index and k.start <= i < k.start + len(k.text)),
                  None)
        guard = ch.protected.get(i - ch.start) if ch is not None else None
        why = f"{PROTECTED} ({guard}: {NAMED[guard].reason})" if guard else NOT_EDITABLE.replace("_", " ")
        chars.append(CharExplanation(i, c, False, 0.0, [], why))
    return chars


def _site_explanations(d: Decided, vocab: Sequence[str], top_k: int, index: int,
                       text: str) -> dict[int, CharExplanation]:
    sites, rows = d.scored.sites, d.scored.rows
    probs, first = d.scorer.calibrate(d.probs), d.scorer.calibrate(d.first)
    starts = list(np.searchsorted(rows.site, np.arange(len(sites)), side="left")) + [len(rows)]
    out = {}
    for s in range(len(sites)):
        ch = d.scored.chunks[int(sites.chunk[s])]
        if ch.text_index != index:
            continue
        lo, hi = starts[s], starts[s + 1]
        order = sorted(range(lo + 1, hi), key=lambda r: -probs[r])[:top_k]
        cands = [Candidate(vocab[int(rows.vid[r])], round(float(probs[r]), 4),
                           round(math.exp(float(d.X[r, COL["gen_lp"]])), 4),
                           round(float(d.X[r, COL["pinyin"]]), 3), round(float(d.X[r, COL["shape"]]), 3),
                           {f: round(float(d.X[r, i]), 3) for i, f in enumerate(FEATURES)})
                 for r in order]
        best = cands[0].char if cands else "the best candidate"
        status = d.status[s]
        if status == APPLIED:
            why = f"applied: {vocab[int(rows.vid[d.chosen[s][0]])]}"
        elif status == CAPPED:
            why = "kept: max_edits reached (more confident edits in this sentence)"
        elif status == GUARDED:
            name, detail = d.guard[s]
            why = NAMED[name].reason.format(best=best, detail=detail)
        elif status == NO_CANDIDATES:
            why = "no candidates"
        elif status == BELOW_THRESHOLD:
            top = f"{cands[0].char} at {cands[0].score:.3f}" if cands else f"at {float(probs[lo + 1:hi].max()):.3f}"
            why = f"kept: best candidate {top} is not above the threshold {d.threshold:g}"
            if float(first[lo + 1 : hi].max()) > d.threshold:
                why += " (re-scored after an edit next to it)"
        else:
            why = f"kept: above the threshold, but the {MAX_ROUNDS} rounds of edits ran out"
        pos = ch.start + int(sites.char[s])
        out[pos] = CharExplanation(pos, text[pos], True, round(float(sites.rtd[s]), 4), cands, why,
                                   round(float(d.probs[lo]), 4))
    return out


def alternatives(decided: Sequence[Decided], vocab: Sequence[str], most: int = 3,
                 floor: float = 0.01) -> dict[tuple[int, int], tuple[str, ...]]:
    """For every applied edit, keyed by (text index, position in the text): the next most probable characters after
    the one applied (at most ``most``, each with a calibrated probability of at least ``floor``), best first."""
    out: dict[tuple[int, int], tuple[str, ...]] = {}
    for d in decided:
        sites, rows = d.scored.sites, d.scored.rows
        probs = d.scorer.calibrate(d.probs)
        starts = list(np.searchsorted(rows.site, np.arange(len(sites)), side="left")) + [len(rows)]
        for s, (row, _) in d.chosen.items():
            lo, hi = starts[s] + 1, starts[s + 1]  # row starts[s] is the character as written
            order = sorted((r for r in range(lo, hi) if r != row and probs[r] >= floor), key=lambda r: -probs[r])
            ch = d.scored.chunks[int(sites.chunk[s])]
            out[(ch.text_index, ch.start + int(sites.char[s]))] = tuple(vocab[int(rows.vid[r])] for r in order[:most])
    return out
