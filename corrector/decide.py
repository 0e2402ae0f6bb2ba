"""Decide: the ranker's rounds over one scored batch, giving every site one status.

Each round takes every open site's most probable candidate above the threshold (``rank.pick_round``: none within
the LM's order of another picked in the same chunk), lets every guard's veto hook keep some as written
(``guards.veto``: the script rule among them, so a vetoed edit never counts or moves a neighbour), caps the rest at
``max_edits`` per sentence (most confident first), applies them, and re-scores the LM features of the open sites next
to them on the corrected text, so several errors in one sentence are fixed in turn. A last round makes the slips of
script of simplified text (a stray traditional character), under the same ``max_edits``. At the end the edits of
traditional text go back to its script (``restore_edits``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from itertools import accumulate

import numpy as np

from corrector.config import CorrectorConfig
from corrector.features import COL, Evidence
from corrector.guards import Proposal, veto
from corrector.rank import MAX_ROUNDS, RankerWeights, best_candidates, choice_probs, pick_round
from corrector.stages import (
    APPLIED,
    BELOW_THRESHOLD,
    CAPPED,
    GUARDED,
    NO_CANDIDATES,
    ROUNDS_OUT,
    Chunk,
    Decided,
    Scored,
)
from corrector.text.chars import split_sentences
from corrector.text.mainland import ZHU, mainland_target
from corrector.text.script import restore_edits
from corrector.types import Edit, Reason


def decide(scored: Scored, ranker: RankerWeights, evidence: Evidence, cfg: CorrectorConfig) -> Decided:
    sites, chunks, vocab = scored.sites, scored.chunks, evidence.vocab
    rows = replace(scored.rows, X=scored.rows.X.copy())  # the LM features change as edits are made
    lm_ids = list(scored.lm_ids) if scored.lm_ids is not None else None
    n = len(sites)
    scorer = ranker.pick(lm_ids is not None)
    assert cfg.threshold is not None, "decide takes settings in force, the threshold resolved (config.in_force)"
    confidence_threshold = cfg.threshold
    threshold = scorer.uncalibrate(confidence_threshold)  # the same edits, on the uncalibrated probability
    open_sites = np.ones(n, dtype=bool)
    chosen: dict[int, tuple[int, float]] = {}
    guard: dict[int, tuple[str, str]] = {}
    capped: set[int] = set()
    first = choice_probs(rows, scorer, n)
    probs = first
    spacing = evidence.lm.order if lm_ids is not None else 1
    sentence = _sentence_of(chunks, sites.chunk, sites.char) if cfg.max_edits else None
    per_sentence: dict[tuple[int, int], int] = defaultdict(int)
    made: dict[int, dict[int, str]] = defaultdict(dict)  # per chunk: position -> target of the edits made so far
    for _ in range(MAX_ROUNDS):
        best_row, best_p = best_candidates(rows, probs, n, open_sites)
        picked = pick_round(sites.chunk, sites.char, best_row, best_p, threshold, spacing)
        for s in list(picked):  # every guard's veto hook: the site stays as written
            k = int(sites.chunk[s])
            best = vocab[int(rows.vid[best_row[s]])]
            why = veto(Proposal(chunks[k], int(sites.char[s]), best, made[k], scorer.veto,
                                float(scorer.calibrate(best_p[s]))), cfg)
            if why is not None:
                guard[s] = why
                open_sites[s] = False
                picked.remove(s)
        if sentence is not None:  # max_edits: the most confident first; the others stay as written,
            keep = []  # and the text the LM re-scores never has them
            for s in picked:
                key = (int(sites.chunk[s]), int(sentence[s]))
                if per_sentence[key] < cfg.max_edits:
                    per_sentence[key] += 1
                    keep.append(s)
                else:
                    capped.add(s)
                    open_sites[s] = False
                picked = keep
        if not picked:
            if (capped or guard) and open_sites.any() and best_p[open_sites].max() > threshold:
                continue  # only capped or guarded sites this round; others may still be picked
            break
        for s in picked:
            chosen[s] = (int(best_row[s]), float(best_p[s]))
            made[int(sites.chunk[s])][int(sites.char[s])] = vocab[int(rows.vid[best_row[s]])]
            open_sites[s] = False
        if lm_ids is None:
            continue
        # the text the LM sees now has the edits; the open sites near them are scored again on it
        if not evidence.refresh(sites, rows, lm_ids, picked, [int(best_row[s]) for s in picked], open_sites):
            break
        probs = choice_probs(rows, scorer, n)
    script = _script_round(scored, probs, chosen, guard, capped, sentence, per_sentence, cfg.max_edits)
    edits = _edits(scored, rows.X, rows.vid, chosen, script, scorer, evidence)
    status = _statuses(scored, probs, chosen, capped, guard, threshold)
    rows.X.setflags(write=False)
    # the generator's distribution is not kept: a call's decisions all live until assemble (84 KB a site)
    return Decided(scored.without_logits(), scorer, confidence_threshold, status, guard, chosen, edits, rows.X, probs,
                   first)


def _script_round(scored: Scored, probs: np.ndarray, chosen: dict[int, tuple[int, float]],
                  guard: Mapping[int, tuple[str, str]], capped: set[int], sentence: np.ndarray | None,
                  per_sentence: dict[tuple[int, int], int], max_edits: int) -> set[int]:
    """The last round: in simplified text, a stray traditional character (於 among simplified ones) that the rounds
    left as written and no guard keeps is a slip of script, and its edit is the site's keep row (the character's
    simplified form, which the networks and the LM read all along: 於 -> 于, reason "script", confidence the ranker's
    probability that it is right). Made like the rounds' edits, into ``chosen`` (in place), the most confident
    first, counted by ``max_edits`` (capped sites stay as written, into ``capped``). The sites made."""
    sites = scored.sites
    starts = np.searchsorted(scored.rows.site, np.arange(len(sites)), side="left")
    slips = []
    for s in range(len(sites)):
        if scored.chunks[int(sites.chunk[s])].stray(int(sites.char[s])) and s not in chosen and s not in guard:
            slips.append((float(probs[int(starts[s])]), s))
    made = set()
    for p, s in sorted(slips, key=lambda x: -x[0]):
        if sentence is not None:
            key = (int(sites.chunk[s]), int(sentence[s]))
            if per_sentence[key] >= max_edits:
                capped.add(s)
                continue
            per_sentence[key] += 1
        chosen[s] = (int(starts[s]), p)
        made.add(s)
    return made


def _edits(scored: Scored, X: np.ndarray, vid: np.ndarray, chosen: Mapping[int, tuple[int, float]],
           script: set[int], scorer, evidence: Evidence) -> tuple[tuple[Edit, ...], ...]:
    """Each chunk's edits. Traditional text: back in its script (the ``script`` guard vetoed, in the rounds, every
    edit that would only change a character's script). Simplified text: each edit's source is the character as
    written; the ``script`` round's edits (``script``) have the reason "script"."""
    sites = scored.sites
    per_chunk: dict[int, list[Edit]] = defaultdict(list)
    for s, (r, p) in chosen.items():
        target = evidence.vocab[int(vid[r])]
        reason: Reason = "script" if s in script else _reason(evidence, sites.src[s], target, X[r])
        confidence = round(float(scorer.calibrate(p)), 4)
        k, i = int(sites.chunk[s]), int(sites.char[s])
        per_chunk[k].append(Edit(i, sites.src[s], target, confidence, reason))
    out = []
    for k, ch in enumerate(scored.chunks):
        edits = sorted(per_chunk.get(k, []), key=lambda e: e.position)
        if ch.view is not None and not ch.mainland:  # back in the original script
            edits = restore_edits(ch.view, edits)
        elif ch.view is not None:  # simplified text: the original character is the source
            edits = [replace(e, source=ch.view.original[e.position]) for e in edits]
        if ch.view is None or ch.mainland:
            edits = mainland_edits(ch.text, edits)
        out.append(tuple(edits))
    return tuple(out)


def mainland_edits(text: str, edits: list[Edit]) -> list[Edit]:
    """Simplified text's edits in mainland form: one that would write 著 where mainland text writes 着 writes 着
    (``corrector.text.mainland``), and is dropped if 着 is what was written."""
    if not any(e.target == ZHU for e in edits):
        return edits
    chars = list(text)
    for e in edits:
        chars[e.position] = e.target
    corrected = "".join(chars)
    out = []
    for e in edits:
        target = mainland_target(corrected, e.position, e.target)
        if target != e.source:
            out.append(replace(e, target=target))
    return out


def _statuses(scored: Scored, probs: np.ndarray, chosen: dict[int, tuple[int, float]], capped: set[int],
              guard: dict[int, tuple[str, str]], threshold: float) -> tuple[str, ...]:
    rows = scored.rows
    starts = np.searchsorted(rows.site, np.arange(len(scored.sites)), side="left").tolist() + [len(rows)]
    out = []
    for s in range(len(scored.sites)):
        lo, hi = starts[s], starts[s + 1]
        if s in guard:
            out.append(GUARDED)
        elif s in chosen:
            out.append(APPLIED)
        elif s in capped:
            out.append(CAPPED)
        elif hi - lo <= 1:
            out.append(NO_CANDIDATES)
        elif float(probs[lo + 1 : hi].max()) <= threshold:
            out.append(BELOW_THRESHOLD)
        else:
            out.append(ROUNDS_OUT)
    return tuple(out)


def _reason(evidence: Evidence, source: str, target: str, x: np.ndarray) -> Reason:
    """From the pair's candidate-table similarities; a pair the table does not hold (a generator or a
    custom candidate, or a bundle without a table) is judged by the bundle's similarity tables."""
    pin, shp = float(x[COL["pinyin"]]), float(x[COL["shape"]])
    if pin == 0.0 and shp == 0.0:
        similarity = evidence.tables.similarity
        pin, shp = similarity.pinyin_sim(source, target), similarity.shape_sim(source, target)
    if pin >= 0.5 and pin >= shp:
        return "pinyin"
    return "shape" if shp >= 0.4 else ("pinyin" if pin >= 0.5 else "other")


def _sentence_of(chunks: tuple[Chunk, ...], chunk: np.ndarray, char: np.ndarray) -> np.ndarray:
    """Index of each site's sentence within its chunk."""
    ends = [list(accumulate(len(s) for s in split_sentences(ch.text))) for ch in chunks]
    return np.array([bisect_right(ends[c], i) for c, i in zip(chunk.tolist(), char.tolist())], dtype=np.int64)
