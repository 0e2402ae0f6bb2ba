"""Gather and score: every candidate of a whole batch, every feature in batched numpy calls.

A *site* is one editable character of a chunk (a single-token CJK character nobody protected).
Its *choices* are the character itself (``keep``) and its shortlisted candidates; each choice is one
row of the feature matrix, scored with the same features, so the ranker compares like with like.

Candidates come from the static table (graded pinyin, shape, real confusions), the generator's
top-k, the user's confusion pairs and word pairs; a cheap linear score over the features that need no language
model cuts them to a shortlist, and only the shortlist gets the LM and word features.

Each source of evidence is one feature object (``state.Feature``) that declares the columns it fills, what of the
rows it reads and the bundle's tables it is built from; ``Evidence`` composes them. Modules: ``columns`` (the
features and their constants), ``sites`` (sites, rows, word pairs), ``state`` (the Feature interface and what the
features share), ``cheap`` (the row's kind and the shortlist's cheap features), ``gather`` (the candidates and the
shortlist), ``pairs`` (word pairs), ``words`` (word, name), ``kept`` (seen, seen_max, kept_word), ``lm`` (lm_gain,
pair), ``compose`` (``Evidence`` and ``SOURCES``, the order the features fill their columns in).
"""

from corrector.features.columns import (
           CHEAP,
           COL,
           FEATURES,
           GEN_MARGIN,
           PAIR_MIN_FREQ,
           PLACE_SUFFIXES,
           SURNAMES,
)
from corrector.features.compose import SOURCES, Evidence
from corrector.features.sites import Rows, Sites, WordPairs
from corrector.features.state import INPUTS, Feature, OwnCounts, RowContext

__all__ = ["CHEAP", "COL", "FEATURES", "GEN_MARGIN", "INPUTS", "PAIR_MIN_FREQ", "PLACE_SUFFIXES", "SOURCES",
           "SURNAMES", "Evidence", "Feature", "OwnCounts", "Rows", "RowContext", "Sites", "WordPairs"]
