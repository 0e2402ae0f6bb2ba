"""Vectorised lookups in sorted integer keys (the decoder's tables of words, bigrams and candidates)."""

from __future__ import annotations

import numpy as np


def lookup_sorted(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """values[i] where keys[i] == query, else 0 (``keys`` sorted; a negative query never matches)."""
    if len(keys) == 0:
        return np.zeros(len(query), dtype=np.float32)
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return np.where((keys[pos] == query) & (query >= 0), values[pos], 0.0).astype(np.float32)
