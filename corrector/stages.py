"""What the decoder's public stages hand each other: prepare -> score -> decide -> assemble.

    prepared = fix.prepare(texts, **settings)           # chunks, their protected characters, batches
    decided = [fix.decide(s, prepared.settings) for s in fix.score(prepared)]   # one Scored per batch
    corrections = assemble(prepared, decided)           # what correct_batch returns

Every decision about a whole text (its script, the words protected in it) is made by ``prepare``; after it each
chunk is decided alone. So the chunks are the corrector's *work units*: ``fix.correct_chunks(chunks, settings)``
corrects any of them, from one prepared call or several with equal settings, in any grouping, and
``prepared.assemble(edits)`` puts a call's texts back together (``correct_batch`` is exactly that; the service
schedules the chunks of many requests this way).

``Scored`` is immutable (its feature matrix is read-only): ``decide`` may run on it any number of times, with any
settings (a threshold sweep decodes the same scores at many thresholds). ``Decided`` gives every site one status;
the edits and ``explain`` are both read off it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from corrector.config import CorrectorConfig
from corrector.features import Rows, Sites
from corrector.rank import Scorer
from corrector.text.script import ScriptView
from corrector.text.tokenize import Encoded
from corrector.types import Correction, Edit

# a site's status after decide
APPLIED = "applied"  # its best edit is made
BELOW_THRESHOLD = "below_threshold"  # no candidate's probability is above the threshold
CAPPED = "capped"  # above the threshold, but max_edits more confident edits were made in its sentence
GUARDED = "guarded"  # above the threshold, but a guard's veto keeps it as written (``Decided.guard``)
NO_CANDIDATES = "no_candidates"  # nothing to choose but the character as written
ROUNDS_OUT = "rounds_out"  # above the threshold when the decoding rounds ran out
STATUSES = (APPLIED, BELOW_THRESHOLD, CAPPED, GUARDED, NO_CANDIDATES, ROUNDS_OUT)
# a character that is no site: PROTECTED (a guard's protect hook, ``Chunk.protected``), UNSUSPECTED (the
# discriminator's P(replaced) is below ``rtd_floor``: the generator is not asked there) or NOT_EDITABLE (not a
# single-token CJK character the model reads: Latin, digits, punctuation, emoji, out-of-vocabulary)
PROTECTED = "protected"
UNSUSPECTED = "unsuspected"
NOT_EDITABLE = "not_editable"


@dataclass(frozen=True)
class Chunk:
    """One sentence (or a window of a long one) of one text, as the model reads it."""

    text_index: int
    start: int  # offset of the chunk in its text
    text: str  # what the model reads: the chunk, in simplified script
    enc: Encoded
    protected: Mapping[int, str]  # chunk position -> the guard that protects it
    view: ScriptView | None = None  # the original chunk when ``text`` is its simplified view
    mainland: bool = True  # a chunk of simplified text: its traditional characters are typos, its edits simplified,
    #                        and an edit to the mainland's word form is a fix (看著 -> 看着); False: traditional text,
    #                        whose edits go back to its script and never only change a script or regional form

    def stray(self, i: int) -> bool:
        """Character ``i`` is a traditional character in simplified text (a typo the script rule fixes)."""
        return self.view is not None and self.mainland and self.view.original[i] != self.text[i]

    def site_tokens(self) -> list[int]:
        """Token indices of the chunk's sites: single-token characters nobody protected."""
        return [t for t, p in enumerate(self.enc.char_pos) if p >= 0 and p not in self.protected]


@dataclass(frozen=True)
class Prepared:
    texts: tuple[str, ...]
    settings: CorrectorConfig
    chunks: tuple[Chunk, ...]
    batches: tuple[tuple[Chunk, ...], ...]  # the chunks with sites, cut into network calls

    def assemble(self, edits: Sequence[Sequence[Edit]]) -> list[Correction]:
        """The corrections of every text from each chunk's edits (``edits[i]``: those of ``chunks[i]``, in chunk
        positions, as ``Corrector.correct_chunks`` returns them)."""
        if len(edits) != len(self.chunks):
            raise ValueError(f"{len(edits)} lists of edits for {len(self.chunks)} chunks")
        per_text: dict[int, list[Edit]] = defaultdict(list)
        for ch, chunk_edits in zip(self.chunks, edits):
            per_text[ch.text_index].extend(replace(e, position=ch.start + e.position) for e in chunk_edits)
        out = []
        for i, text in enumerate(self.texts):
            made = sorted(per_text.get(i, []), key=lambda e: e.position)
            chars = list(text)
            for e in made:
                chars[e.position] = e.target
            out.append(Correction(text, "".join(chars), made))
        return out


@dataclass(frozen=True)
class Scored:
    """One batch: its sites (the networks' outputs) and every feature of every choice of every site."""

    chunks: tuple[Chunk, ...]
    sites: Sites
    rows: Rows  # rows.X is read-only
    lm_ids: tuple[np.ndarray, ...] | None  # each chunk in the LM's ids; None when decoding without the LM

    def without_logits(self) -> Scored:
        """The same, without the generator's distribution (decide needs only the features): much smaller."""
        return replace(self, sites=replace(self.sites, logprobs=self.sites.logprobs.without_logits()))


@dataclass(frozen=True)
class Decided:
    """The decisions on one Scored batch: a status per site, the edits made, and what explain shows."""

    scored: Scored
    scorer: Scorer  # what the probabilities came from (its calibration gives confidences)
    threshold: float  # the confidence threshold in force
    status: tuple[str, ...]  # per site, one of STATUSES
    guard: Mapping[int, tuple[str, str]]  # GUARDED site -> (guard name, detail)
    chosen: Mapping[int, tuple[int, float]]  # APPLIED site -> (row, probability)
    edits: tuple[tuple[Edit, ...], ...]  # per chunk of the batch, chunk positions, in the original script
    X: np.ndarray  # the rows' features when the decoding stopped (LM features re-scored after edits)
    probs: np.ndarray  # every row's probability then ...
    first: np.ndarray  # ... and in the first round, before any edit next to it


def assemble(prepared: Prepared, decided: Sequence[Decided]) -> list[Correction]:
    """The corrections of every text: each chunk's edits at their positions in the text."""
    return prepared.assemble(edits_by_chunk(prepared.chunks, decided))


def edits_by_chunk(chunks: Sequence[Chunk], decided: Sequence[Decided]) -> list[tuple[Edit, ...]]:
    """Each of ``chunks``' edits as ``decided`` made them (none for a chunk no batch held: it has no site)."""
    made = {id(ch): e for d in decided for ch, e in zip(d.scored.chunks, d.edits)}
    return [made.get(id(ch), ()) for ch in chunks]
