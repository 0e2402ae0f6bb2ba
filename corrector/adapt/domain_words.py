"""A domain's own words: the frequent words of a text that jieba's dictionary lacks (names, product names, terms),
which an adapted bundle keeps as written (``protect_domain_words``, ``corrector/guards.py``).

jieba segments each line with its HMM on, which joins runs of characters its dictionary cannot place into new
words; a new word is kept when it is two to eight Chinese characters long, occurs at least ``min_count`` times
(a slip seldom repeats itself that often) and holds together: its characters occur side by side far more often
than chance would put them there (pointwise mutual information per character joined, ``cohesion``, at least
``MIN_COHESION``). The HMM also joins common characters that are no word at all (这是, 两人, 而成: 2.2-2.6 nats);
names and terms hold together far more tightly (管腔 4.1, 新冠 6.5, 吐槽 9.5).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from corrector.text.chars import is_cjk

MIN_COUNT = 5
MIN_COHESION = 3.0  # nats
MAX_WORDS = 50_000
LENGTHS = range(2, 9)


def new_words(lines: Sequence[str], min_count: int = MIN_COUNT, max_words: int = MAX_WORDS,
              min_cohesion: float = MIN_COHESION, progress: bool = False) -> list[tuple[str, int]]:
    """(word, count) of the frequent, cohesive words of ``lines`` that jieba's dictionary lacks, most frequent
    first (ties: the word's code points). ``progress``: a bar on stderr (jieba reads about 0.4M characters a second)."""
    return kept_words(*counted(lines, progress), min_count, max_words, min_cohesion)


def counted(lines: Sequence[str], progress: bool = False) -> tuple[Counter[str], Counter[str]]:
    """(how often each new word of ``lines`` occurs, how often each character does). Each line is segmented on
    its own, so the counts of some lines are those of all less those of the rest."""
    from tqdm import tqdm

    from corrector.evidence.dictionary import tokenizer

    tok = tokenizer()
    known = tok.FREQ
    words: Counter[str] = Counter()
    chars: Counter[str] = Counter()
    for line in tqdm(lines, desc="words", unit=" lines", disable=not progress, leave=False, mininterval=1.0):
        chars.update(line)
        for w in tok.lcut(line, HMM=True):
            if len(w) in LENGTHS and not known.get(w) and all(is_cjk(c) for c in w):
                words[w] += 1
    return words, chars


def kept_words(words: Counter[str], chars: Counter[str], min_count: int = MIN_COUNT, max_words: int = MAX_WORDS,
               min_cohesion: float = MIN_COHESION) -> list[tuple[str, int]]:
    """``new_words`` from the counts of ``counted``."""
    total = max(1, sum(chars.values()))
    kept = [(w, c) for w, c in words.items() if c >= min_count and cohesion(w, c, chars, total) >= min_cohesion]
    kept.sort(key=lambda wc: (-wc[1], wc[0]))
    return kept[:max_words]


def cohesion(word: str, count: int, chars: Counter[str], total: int) -> float:
    """ln P(word) - sum of ln P(character), per character joined (``len(word) - 1``), with P counted in the text."""
    return (math.log(count / total) - sum(math.log(max(chars[c], 1) / total) for c in word)) / (len(word) - 1)
