"""Word pieces for the non-CJK words of a corpus (Latin words, numbers), learnt the same way every time.

The pieces are learnt as Hugging Face's ``WordPieceTrainer`` learns them: the words are split as BERT splits them
(lowercased; whitespace, punctuation and CJK characters end a word), each word's characters after the first carry
the ``##`` prefix, and the most frequent adjacent pair (counted over the words with their frequencies) is merged
into a new piece while it occurs at least ``min_frequency`` times. Ties go to the smaller pair of pieces, not to
hash order as in the tokenizers trainer (huggingface/tokenizers#1794), so the same corpus always gives the same
pieces, whatever the order of its sentences.
"""

from __future__ import annotations

import collections
import heapq
import re
import unicodedata
from collections.abc import Iterator, Sequence

from corrector.text.chars import is_cjk

PREFIX = "##"


def is_punctuation(c: str) -> bool:
    """BERT's rule: the ASCII symbols and every Unicode punctuation category."""
    cp = ord(c)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or \
        unicodedata.category(c).startswith("P")


def word_counts(sents: Sequence[str]) -> collections.Counter[str]:
    """Every word of ``sents`` without a CJK character (a punctuation mark is a word of its own), counted."""
    chars: set[str] = set()
    for s in sents:
        chars.update(s.lower())
    space = {c for c in chars if c.isspace() or unicodedata.category(c) in ("Cc", "Cf")}
    punct = {c for c in chars if c not in space and is_punctuation(c)}
    cjk = {c for c in chars if is_cjk(c)} - punct

    def cls(cs: set[str]) -> str:
        return "".join(re.escape(c) for c in sorted(cs))

    stop = cls(space | punct | cjk)
    pattern = re.compile(f"[^{stop}]+" + (f"|[{cls(punct)}]" if punct else "")) if stop else re.compile(r".+")
    counts: collections.Counter[str] = collections.Counter()
    for s in sents:
        counts.update(pattern.findall(s.lower()))
    return counts


def pieces(counts: collections.Counter[str], size: int, min_frequency: int = 5) -> Iterator[str]:
    """The alphabet (sorted), then each merged piece in the order it is learnt: at most ``size`` pieces."""
    words = sorted(counts)
    freq = [counts[w] for w in words]
    split = [[w[0], *(PREFIX + c for c in w[1:])] for w in words]
    alphabet = sorted({p for word in split for p in word})
    yield from alphabet[:size]
    seen, n = set(alphabet), len(alphabet)
    pairs: collections.Counter[tuple[str, str]] = collections.Counter()
    where: dict[tuple[str, str], set[int]] = collections.defaultdict(set)
    for i, word in enumerate(split):
        for pair in zip(word, word[1:]):
            pairs[pair] += freq[i]
            where[pair].add(i)
    heap = [(-count, pair) for pair, count in pairs.items()]
    heapq.heapify(heap)
    while heap and n < size:
        count, best = heapq.heappop(heap)
        if -count != pairs[best]:  # a stale entry: the pair's count changed since
            continue
        if -count < min_frequency:
            break
        merged = best[0] + best[1].removeprefix(PREFIX)
        touched = set()
        for i in where.pop(best):
            word = split[i]
            for pair in zip(word, word[1:]):
                pairs[pair] -= freq[i]
                touched.add(pair)
            out, j = [], 0
            while j < len(word):
                if j + 1 < len(word) and (word[j], word[j + 1]) == best:
                    out.append(merged)
                    j += 2
                else:
                    out.append(word[j])
                    j += 1
            split[i] = out
            for pair in zip(out, out[1:]):
                pairs[pair] += freq[i]
                where[pair].add(i)
                touched.add(pair)
        del pairs[best]
        for pair in touched - {best}:
            if pairs[pair] > 0:
                heapq.heappush(heap, (-pairs[pair], pair))
        if merged not in seen:
            seen.add(merged)
            n += 1
            yield merged
