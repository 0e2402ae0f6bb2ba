"""A document's own terms: the words its author writes again and again (根结点's 结点, 移项, a translation's name for
an operation, a nickname in a thanks table), as evidence that the text means them.

A term is a word of two or more Chinese characters as jieba segments the text (with its HMM, so that words it does
not know count too: 三鸽, 终值), written at least ``MIN_COUNT`` times in the document or the tree of documents
being checked, unless a word one character away is written far more often (``RIVAL_RATIO``: then it is more
likely a slip of that word). A slip is rarely written the same way three times; a term of the text's own usually is. The
``terms`` setting keeps such words as written where the text's segmentation makes them a word (``guards.Terms``),
so a 的 inside 真的 is still read in 认真的学习 (segmented 认真/的/学习).

    counts = term_counts(texts)               # every text of the document or tree, in any order
    fix.correct_batch(texts, terms=recurring(counts))

The same holds for two characters side by side, whatever the segmentation (``bigrams``): a pair the text writes at
least ``BIGRAM_MIN_COUNT`` times with no far commoner sound-alike rival (向左 in a text that walks a grid, 移项 and
满秩 in algebra, 佐为 in a story) is kept as written wherever it stands (the ``bigrams`` setting). A slip is rarely
written the same way eight times. A pair holding 的, 地 or 得 is never one: which of them a sentence needs depends
on the words around it, not on a habit of the author's.

    fix.correct_batch(texts, terms=recurring(counts), bigrams=recurring(bigram_counts(texts), BIGRAM_MIN_COUNT))

The counts add up, so a tree's are the sum of its files' (``lint`` keeps each file's in its cache) and do not
depend on the order the files are read in.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

from corrector.text.chars import is_cjk

MIN_COUNT = 3  # a word written this often in the document or tree is one of its terms ...
RIVAL_RATIO = 2  # ... unless it writes a rival (a word one sound-alike character away) more than twice as often:
#                  此事 written 3 times beside 此时 240 times is more likely a slip of it than a term; 结点 1,452 times
#                  beside 节点 2,180 times is the author's term (chosen on six documentation trees' judged findings:
#                  docs/experiments/2026-12-trusted-text.md)
BIGRAM_MIN_COUNT = 8  # two characters written side by side this often are kept as written (chosen on the six
#                       documentation trees' judged findings: docs/experiments/2026-12-published-text.md)
PARTICLES = frozenset("的地得")  # never in a bigram kept as written


def words(text: str) -> Iterator[tuple[int, str]]:
    """(offset, word) of each word of two or more Chinese characters in ``text``, as jieba (with its HMM)
    segments it."""
    from corrector.evidence.dictionary import tokenizer  # jieba, its cache in a private directory

    pos = 0
    for w in tokenizer().lcut(text, HMM=True):
        if len(w) > 1 and all(is_cjk(c) for c in w):
            yield pos, w
        pos += len(w)


def term_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each word of ``texts`` is written (``words``)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for _, w in words(text))
    return counts


def bigrams(text: str) -> Iterator[tuple[int, str]]:
    """(offset, pair) of every two Chinese characters side by side in ``text``, less the pairs holding 的, 地 or
    得."""
    for i in range(len(text) - 1):
        a, b = text[i], text[i + 1]
        if is_cjk(a) and is_cjk(b) and a not in PARTICLES and b not in PARTICLES:
            yield i, a + b


def bigram_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each pair of ``texts`` is written (``bigrams``)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for _, w in bigrams(text))
    return counts


def recurring(counts: Counter[str] | dict[str, int], min_count: int = MIN_COUNT,
              rival_ratio: float = RIVAL_RATIO) -> tuple[str, ...]:
    """The document's terms, sorted, as the ``terms`` setting takes them: the words written at least ``min_count``
    times, less those with a rival written more than ``rival_ratio`` times as often. A rival is a word of ``counts``
    one character away whose other character sounds the same (toneless pinyin, as an IME types it: 此事 and 此时,
    not 队首 and 队尾)."""
    if min_count < 1:
        return ()
    groups: dict[str, list[tuple[int, str]]] = {}  # a word with one character blanked -> the words written so
    for w, n in counts.items():
        for i in range(len(w)):
            groups.setdefault(w[:i] + "\0" + w[i + 1:], []).append((n, w))

    def rivalled(w: str, n: int) -> bool:
        return any(m > rival_ratio * n and sounds(w[i]) & sounds(other[i])
                   for i in range(len(w)) for m, other in groups[w[:i] + "\0" + w[i + 1:]] if other != w)

    return tuple(sorted(w for w, n in counts.items() if n >= min_count and not rivalled(w, n)))


OWN = {"terms": (term_counts, MIN_COUNT), "bigrams": (bigram_counts, BIGRAM_MIN_COUNT)}  # a document's own lists,
# each a setting of the corrector's: its counter, and how often a word or pair is written to be kept by default


def own_lists(texts: Iterable[str], least: Mapping[str, int]) -> dict[str, tuple[str, ...]]:
    """Each of ``OWN``'s lists for ``texts`` (one document): what they write at least ``least[name]`` times, less
    what a far commoner rival unseats (``recurring``; 0: none)."""
    texts = list(texts)
    return {name: recurring(count(texts), least[name]) for name, (count, _) in OWN.items()}


@functools.lru_cache(maxsize=65536)
def sounds(char: str) -> frozenset[str]:
    """The readings of ``char`` without tones (all of a heteronym's)."""
    from pypinyin import Style, pinyin

    return frozenset(pinyin(char, style=Style.NORMAL, heteronym=True)[0])
