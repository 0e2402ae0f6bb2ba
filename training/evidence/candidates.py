"""Static candidate lists for the decoder: graded pinyin similarity fitted to real confusions, shape
neighbours and the confusion prior, for every character of the candidate pool.

    python -m training.evidence.candidates --similarity data/electra_models/default/similarity \
        --data ../shared/data --out runs/candidates

Graded pinyin similarity: a syllable pair scores s_initial × s_final × tone, where s_initial(x, y) and
s_final(x, y) are the rates at which the real training pairs confuse x and y, shrunk toward a rule
prior (fuzzy-pinyin pairs and phonetic neighbours such as b/p, j/q/x, in/ing, uo/ou get 0.6, others
0.1). So nu/nü, bo/po or ban/bian get a score instead of a veto. A character pair takes the best over
their readings. The confusion prior counts (written → intended) character pairs in the training
pairs (``training.data.splits.train_pairs``: never the dev split or a test set).

Output: ``candidates.npz`` (CSR lists per source character: candidate, pinyin, shape, count) and
``candidates.json`` (the fitted tables and the parameters), read by ``corrector.evidence.candidates``; with the corpus in
--data also ``names.npz`` (``training.evidence.foreign_names``). ``--folds K`` writes K such tables instead, each counted
without one fold of the training pairs (cross-fitting, ``training.fitting.crossfit``).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from itertools import product
from pathlib import Path

import numpy as np

from corrector.evidence.candidates import CANDIDATES_JSON, CANDIDATES_NPZ
from corrector.evidence.foreign_names import NAMES_NPZ
from corrector.evidence.kept_forms import BIGRAMS_NPZ, WORDS_NPZ
from corrector.evidence.similarity import SimilarityTables, fuzzy_variants, split_reading, split_syllable

from ..data.prepare import corpus_files, read_lines
from ..data.splits import text_folds, train_pair_files, train_pairs
from .foreign_names import count_name_chars, name_arrays

INITIAL_GROUPS = ("z zh", "c ch", "s sh", "n l", "l r", "f h", "b p", "d t", "g k", "j q x", "z c s",
                  "zh ch sh", "j zh", "q ch", "x sh", "y w", "m n", "h k")
RELATED, UNRELATED, SHRINK = 0.6, 0.1, 10.0
TONE_FACTOR = 0.85  # same syllable, another tone


def _edit1(a: str, b: str) -> bool:
    """One insertion, deletion or substitution, or one adjacent transposition (uo/ou)."""
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    if abs(len(a) - len(b)) != 1:
        return False
    short, long_ = sorted((a, b), key=len)
    return any(long_[:i] + long_[i + 1 :] == short for i in range(len(long_)))


def _related_initials() -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for g in INITIAL_GROUPS:
        members = g.split()
        out.update((a, b) for a in members for b in members if a != b)
    return out


def _shrunk(counts: Counter, a: str, b: str, prior: float) -> float:
    k = counts[(a, b)] + counts[(b, a)]
    return min(0.95, (0.9 * k + SHRINK * prior) / (k + SHRINK))


def fit_part_similarity(pairs: list[tuple[str, str]], tables: SimilarityTables) -> tuple[Counter, Counter]:
    """Counts of (written, intended) initials and finals over gold character pairs whose other part matches."""
    ini: Counter = Counter()
    fin: Counter = Counter()
    for src, tgt in pairs:
        for a, b in zip(src, tgt):
            if a == b:
                continue
            best = None
            for ra, rb in product(tables.readings(a), tables.readings(b)):
                (sa, _), (sb, _) = split_reading(ra), split_reading(rb)
                (ia, fa), (ib, fb) = split_syllable(sa), split_syllable(sb)
                score = (ia == ib) + (fa == fb)
                if best is None or score > best[0]:
                    best = (score, ia, fa, ib, fb)
            if best is None or best[0] != 1:
                continue
            _, ia, fa, ib, fb = best
            if fa == fb:
                ini[(ia, ib)] += 1
            else:
                fin[(fa, fb)] += 1
    return ini, fin


class GradedPinyin:
    """Syllable-with-tone similarity from fitted initial and final tables."""

    def __init__(self, ini_counts: Counter, fin_counts: Counter):
        self.ini_counts, self.fin_counts = ini_counts, fin_counts
        self.related_ini = _related_initials()

    def initial(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        return _shrunk(self.ini_counts, a, b, RELATED if (a, b) in self.related_ini else UNRELATED)

    def final(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        related = _edit1(a, b) or b in {split_syllable(v)[1] for v in fuzzy_variants("d" + a)}
        return _shrunk(self.fin_counts, a, b, RELATED if related else UNRELATED)

    def reading(self, ra: str, rb: str) -> float:
        (sa, ta), (sb, tb) = split_reading(ra), split_reading(rb)
        (ia, fa), (ib, fb) = split_syllable(sa), split_syllable(sb)
        return self.initial(ia, ib) * self.final(fa, fb) * (1.0 if ta == tb else TONE_FACTOR)


def pool_chars(tables: SimilarityTables, size: int) -> list[str]:
    """The ``size`` most frequent characters (corpus counts in the similarity table)."""
    chars = [c for c in tables.chars() if tables.frequency(c) > 0]
    return sorted(chars, key=lambda c: (-tables.frequency(c), c))[:size]


def pinyin_matrix(pool: list[str], tables: SimilarityTables, graded: GradedPinyin) -> np.ndarray:
    """(len(pool), len(pool)) float32: best graded similarity over the two characters' readings."""
    readings = sorted({r for c in pool for r in tables.readings(c)})
    rid = {r: i for i, r in enumerate(readings)}
    syl = np.array([[graded.reading(a, b) for b in readings] for a in readings], dtype=np.float32)
    width = max(len(tables.readings(c)) for c in pool)
    r_of = np.full((len(pool), width), -1, dtype=np.int64)
    for i, c in enumerate(pool):
        for j, r in enumerate(tables.readings(c)):
            r_of[i, j] = rid[r]
    # char x reading: best over the char's own readings
    char_syl = np.zeros((len(pool), len(readings)), dtype=np.float32)
    for j in range(width):
        ok = r_of[:, j] >= 0
        char_syl[ok] = np.maximum(char_syl[ok], syl[r_of[ok, j]])
    out = np.zeros((len(pool), len(pool)), dtype=np.float32)
    for j in range(width):
        ok = r_of[:, j] >= 0
        out[:, ok] = np.maximum(out[:, ok], char_syl[:, r_of[ok, j]])
    return out


MIN_BIGRAM_COUNT = 2  # bigrams written correctly fewer times than this are not stored


def correct_bigrams(pairs: list[tuple[str, str]]) -> Counter:
    """How often each two-character sequence was written correctly (both characters as meant) in the pairs."""
    counts: Counter = Counter()
    for s, t in pairs:
        counts.update(s[i : i + 2] for i in range(len(s) - 1) if s[i] == t[i] and s[i + 1] == t[i + 1])
    return counts


def bigram_arrays(pairs: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    """bigrams.npz's ``bigrams`` (sorted) and ``count``: the correctly written bigrams seen at least
    MIN_BIGRAM_COUNT times."""
    counts = correct_bigrams(pairs)
    kept = sorted(b for b, n in counts.items() if n >= MIN_BIGRAM_COUNT)
    return {"bigrams": np.array(kept, dtype="<U2"),
            "count": np.array([min(counts[b], 65535) for b in kept], dtype=np.uint16)}


WORD_LENGTHS = (2, 3)  # the word forms counted: jieba's two- and three-character words


def _words(text: str) -> list[tuple[int, str]]:
    """(start, word) of the two- and three-character words of jieba's segmentation (dictionary only, no HMM)."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    out, i = [], 0
    for w in jieba.cut(text, HMM=False):
        if len(w) in WORD_LENGTHS:
            out.append((i, w))
        i += len(w)
    return out


def word_counts(pairs: list[tuple[str, str]]) -> tuple[Counter, Counter]:
    """(kept, changed): how often each word of the targets was written as meant, and how often each word of the
    sources was written where the target differs, in the real pairs."""
    kept: Counter = Counter()
    changed: Counter = Counter()
    for s, t in pairs:
        if len(s) != len(t):
            continue
        kept.update(w for i, w in _words(t) if s[i : i + len(w)] == w)
        changed.update(w for i, w in _words(s) if t[i : i + len(w)] != w)
    return kept, changed


def word_arrays(pairs: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    """words.npz's ``words`` (sorted), ``kept`` and ``changed``: the words counted at least twice in all (a word
    counted once is the pair's own, which the ranker's leave-one-out would take away anyway)."""
    kept, changed = word_counts(pairs)
    words = sorted(w for w in kept.keys() | changed.keys() if kept[w] + changed[w] >= 2)
    return {"words": np.array(words, dtype=f"<U{max(WORD_LENGTHS)}"),
            "kept": np.array([min(kept[w], 65535) for w in words], dtype=np.uint16),
            "changed": np.array([min(changed[w], 65535) for w in words], dtype=np.uint16)}


def build(similarity: Path, data_dir: Path, out: Path, pool_size: int = 6000, min_pinyin: float = 0.3,
          min_shape: float = 0.3, holdout: int = 1000, pairs: list[tuple[str, str]] | None = None,
          names: dict[str, np.ndarray] | None = None) -> dict:
    """The tables from ``pairs`` (default: every training pair); ``names`` (default: counted from the corpus
    in ``data_dir`` when it has one) goes into names.npz as it is."""
    t0 = time.time()
    tables = SimilarityTables.load(similarity)
    given = pairs
    if pairs is None:
        pairs = train_pairs(data_dir, holdout)
    ini, fin = fit_part_similarity(pairs, tables)
    graded = GradedPinyin(ini, fin)
    pool = pool_chars(tables, pool_size)
    index = {c: i for i, c in enumerate(pool)}
    psim = pinyin_matrix(pool, tables, graded)
    confusions: Counter = Counter((a, b) for s, t in pairs for a, b in zip(s, t) if a != b)
    seen_as: dict[str, list[str]] = {}
    for a, b in confusions:
        seen_as.setdefault(a, []).append(b)
    written = Counter(c for s, _ in pairs for c in s)
    variants = script_variants(pool)
    sources = sorted(set(pool) | {a for a, _ in confusions}, key=lambda c: (c not in index, index.get(c, 0), c))
    offsets, cands, pin, shp, cnt = [0], [], [], [], []
    for a in sources:
        row: dict[str, None] = {}
        if a in index:
            sims = psim[index[a]]
            for j in np.flatnonzero(sims >= min_pinyin):
                row[pool[j]] = None
        for b, s in tables.shape_neighbours(a, k=1000):
            if s >= min_shape and b in index:
                row[b] = None
        for b in [b for b in row if (a, b) in variants]:  # another script's form of the same character
            row.pop(b)
        row.update(dict.fromkeys(seen_as.get(a, ())))  # real errors stay, whatever they look like
        row.pop(a, None)
        for b in row:
            cands.append(b)
            pin.append(psim[index[a], index[b]] if a in index and b in index else _pair_pinyin(a, b, tables, graded))
            shp.append(tables.shape_sim(a, b))
            cnt.append(min(confusions[(a, b)], 65535))
        offsets.append(len(cands))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out / CANDIDATES_NPZ,
        sources=np.array(sources), offsets=np.array(offsets, dtype=np.int32), candidates=np.array(cands),
        pinyin=np.array(pin, dtype=np.float16), shape=np.array(shp, dtype=np.float16),
        count=np.array(cnt, dtype=np.uint16),
        written=np.array([min(written[a], 2**31 - 1) for a in sources], dtype=np.int32),
        variants=np.array(sorted(a + b for a, b in variants if (a, b) not in confusions)),
    )
    bigrams = bigram_arrays(pairs)
    np.savez_compressed(out / BIGRAMS_NPZ, **bigrams)  # type: ignore[arg-type]  # numpy's stub types **kwds as bool
    words = word_arrays(pairs)
    np.savez_compressed(out / WORDS_NPZ, **words)  # type: ignore[arg-type]
    if names is None and (data_dir / "corpus").is_dir():  # the foreign names' characters (training.evidence.foreign_names)
        names = corpus_names(data_dir)
    if names is not None:
        np.savez_compressed(out / NAMES_NPZ, **names)  # type: ignore[arg-type]
    meta = {
        "pool_size": len(pool), "sources": len(sources), "pairs": len(cands),
        "min_pinyin": min_pinyin, "min_shape": min_shape, "tone_factor": TONE_FACTOR,
        "prior": {"related": RELATED, "unrelated": UNRELATED, "shrink": SHRINK},
        "fitted_on": "training.data.splits.train_pairs (the real pairs; the dev split held out of sighan_train)"
        if given is None else "the pairs given",
        "real_pair_files": train_pair_files(data_dir) if given is None else [],
        "pairs_counted": len(pairs),
        "gold_pairs": sum(confusions.values()),
        "script_variant_pairs": len(variants),
        "correct_bigrams": len(bigrams["bigrams"]), "min_bigram_count": MIN_BIGRAM_COUNT,
        "counted_words": len(words["words"]),
        "name_chars": None if names is None else len(names["chars"]),
        "initials": {f"{a}>{b}": n for (a, b), n in ini.most_common()},
        "finals": {f"{a}>{b}": n for (a, b), n in fin.most_common()},
        "seconds": round(time.time() - t0, 1),
    }
    (out / CANDIDATES_JSON).write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    return meta


def corpus_names(data_dir: Path) -> dict[str, np.ndarray]:
    """names.npz's arrays: the foreign names' characters counted in ``data_dir``/corpus."""
    return name_arrays(*count_name_chars(read_lines(corpus_files(data_dir / "corpus"))))


def build_folds(similarity: Path, data_dir: Path, fold_out: Path, folds: int, holdout: int = 1000,
                **options) -> list[dict]:
    """``fold_out``/fold0 .. fold{K-1}: the tables counted without one fold of the training pairs each (the
    folds of ``training.data.splits.text_folds``, as the LM's: contiguous blocks of each file, so an essay stays in
    one fold). A training pair scored with its fold's tables, or a dev pair with its essay-mates', is then no
    evidence for itself (``training.fitting.crossfit``): its own errors, bigrams and words are not in the counts, as a
    test sentence's are not. The foreign names are counted once (the corpus, not the pairs)."""
    pairs = train_pairs(data_dir, holdout)
    fold_of = text_folds(data_dir, folds)
    names = corpus_names(data_dir) if (data_dir / "corpus").is_dir() else None
    metas = []
    for k in range(folds):
        rest = [p for p in pairs if fold_of.get(p[1], 0) != k]
        meta = build(similarity, data_dir, fold_out / f"fold{k}", holdout=holdout, pairs=rest, names=names, **options)
        metas.append({"fold": k, "pairs_counted": len(rest), "left_out": len(pairs) - len(rest)})
        print(f"fold{k}: {len(rest):,} of {len(pairs):,} training pairs counted, {meta['seconds']} s", flush=True)
    (fold_out / "folds.json").write_text(json.dumps({"folds": folds, "holdout": holdout, "per_fold": metas},
                                                    indent=1), encoding="utf-8")
    return metas


def script_variants(chars: list[str]) -> set[tuple[str, str]]:
    """(a, b) pairs of the pool that are one character in two scripts or regional standards: OpenCC's
    traditional-to-simplified (t2s, and Taiwan's tw2s) maps one onto the other, or both onto the same
    character, unless both are characters of simplified text (着/著: different uses there, candidates of each other).
    Replacing one by the other is a script conversion, never a spelling fix."""
    import opencc

    pool = set(chars)
    conv = [opencc.OpenCC(c) for c in ("t2s", "tw2s", "hk2s")]
    base: dict[str, set[str]] = {}
    for c in chars:
        for cv in conv:
            s = cv.convert(c)
            if len(s) == 1:
                base.setdefault(s, set()).add(c)
        base.setdefault(c, set()).add(c)
    out: set[tuple[str, str]] = set()
    simplified = {c for c in chars if conv[0].convert(c) == c}  # 着 and 著 both: two characters of simplified text
    for group in base.values():
        members = [c for c in group if c in pool]
        out.update((a, b) for a in members for b in members if a != b and not (a in simplified and b in simplified))
    return out


def _pair_pinyin(a: str, b: str, tables: SimilarityTables, graded: GradedPinyin) -> float:
    return max((graded.reading(x, y) for x in tables.readings(a) for y in tables.readings(b)), default=0.0)


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--similarity", type=Path, required=True, help="similarity tables (training.evidence.similarity)")
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (holds csc/, and corpus/ for names.npz)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pool-size", type=int, default=6000, help="candidates come from this many most frequent chars")
    ap.add_argument("--min-pinyin", type=float, default=0.3)
    ap.add_argument("--min-shape", type=float, default=0.3)
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--folds", type=int, default=0, help="instead: K tables, each without one fold of the training "
                    "pairs, into --out/fold0 .. fold{K-1} (cross-fitting: training.fitting.fit --fit-count-folds)")
    return ap


def main(argv: list[str] | None = None) -> None:
    ap = parser()
    a = ap.parse_args(argv)
    if a.folds:
        if a.folds < 2:
            ap.error("--folds needs at least 2")
        build_folds(a.similarity, a.data, a.out, a.folds, a.holdout, pool_size=a.pool_size, min_pinyin=a.min_pinyin,
                    min_shape=a.min_shape)
        return
    meta = build(a.similarity, a.data, a.out, a.pool_size, a.min_pinyin, a.min_shape, a.holdout)
    print(f"{meta['sources']:,} source chars, {meta['pairs']:,} candidate pairs, {meta['seconds']} s → {a.out}")


if __name__ == "__main__":
    main()
