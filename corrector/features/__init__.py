"""Gather and score: every candidate of a whole batch, every feature in batched numpy calls.

A *site* is one editable character of a chunk (a single-token CJK character nobody protected).
Its *choices* are the character itself (``keep``) and its shortlisted candidates; each choice is one
row of the feature matrix, scored with the same features, so the ranker compares like with like.

Candidates come from the static table (graded pinyin, shape, real confusions), the generator's
top-k and the user's confusion pairs; a cheap linear score over the features that need no language
model cuts them to a shortlist, and only the shortlist gets the LM and word features.

Modules: ``columns`` (the features and their constants), ``sites`` (sites, rows, word pairs), ``candidates``
(gathering and the cheap features), ``words`` (word, name), ``kept`` (seen, seen_max, kept_word), ``lm``
(lm_gain, pair), ``evidence`` (``Evidence`` and the registry of which module fills which columns).
"""

from corrector.features.columns import (
           CHEAP,
           COL,
           FEATURES,
           GEN_MARGIN,
           PAIR_MIN_FREQ,
           PLACE_SUFFIXES,
           RATE_A,
           RATE_B,
           SURNAMES,
)
from corrector.features.compose import REGISTRY, Evidence, RowContext
from corrector.features.sites import Rows, Sites, WordPairs

__all__ = ["CHEAP", "COL", "FEATURES", "GEN_MARGIN", "PAIR_MIN_FREQ", "PLACE_SUFFIXES", "RATE_A", "RATE_B", "REGISTRY",
           "SURNAMES", "Evidence", "RowContext", "Rows", "Sites", "WordPairs"]
