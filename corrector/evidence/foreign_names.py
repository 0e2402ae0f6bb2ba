"""Foreign names written in Han characters (柯林顿, 哈玛斯, 阿布沙伊夫): runs of characters that the corpus mostly
writes inside dot-joined names (唐纳德·特朗普), counted by ``training.evidence.foreign_names`` into ``candidates/names.npz``.

Transliterations differ between regions and papers (柯林顿 and 克林顿, 哈玛斯 and 哈马斯), so the LM and the
candidates readily "correct" a correct name into another region's spelling; real spelling errors inside such
names are rare (at a share of 0.005: 1 of the dev split's 1,304 erroneous characters, none of SIGHAN-15's 705, 9 of
the training pairs' 16,824). ``protect_foreign_names`` leaves every character of such a run as it is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from corrector.types import CorrectorError

NAMES_NPZ = "names.npz"  # optional: per character, how often the corpus writes it inside dot-joined foreign names
NAME_SHRINK = 20.0  # share = in_names / (total + NAME_SHRINK): a rare character's share is shrunk (seen twice, both in names: 0.09)
RUN = 3  # characters in a row that make a foreign name


def load_name_shares(directory: str | Path) -> dict[str, float]:
    """Per character of ``directory``'s names.npz: in_names / (total + NAME_SHRINK) (no file: none)."""
    path = Path(directory) / NAMES_NPZ
    if not path.is_file():
        return {}
    try:
        f = np.load(path, allow_pickle=False)
        share = f["in_names"] / (f["total"] + NAME_SHRINK)
        return dict(zip(f["chars"].tolist(), share.tolist()))
    except (OSError, KeyError, ValueError) as e:
        raise CorrectorError(f"cannot read {path}: {e}") from None


def name_chars(shares: dict[str, float], min_share: float) -> frozenset[str]:
    """The characters written inside foreign names at least ``min_share`` of the times the corpus has them."""
    return frozenset(c for c, s in shares.items() if s >= min_share)


def foreign_name_positions(text: str, chars: frozenset[str], run: int = RUN) -> set[int]:
    """Positions of ``text`` inside a run of at least ``run`` consecutive characters of ``chars``."""
    out: set[int] = set()
    start = None
    for i, c in enumerate(text + "\x00"):
        if c in chars:
            start = i if start is None else start
            continue
        if start is not None and i - start >= run:
            out.update(range(start, i))
        start = None
    return out
