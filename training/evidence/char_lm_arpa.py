"""ARPA text <-> our character LM format.

    python -m training.evidence.char_lm --from-arpa MODEL.arpa[.gz] --out DIR [--quant 8]   # e.g. a KenLM char model
    python -m training.evidence.char_lm --to-arpa DIR --out MODEL.arpa                        # e.g. to query it with KenLM

ARPA stores log10 values; ours are natural logs.  Tokens must be single characters (plus <s>, </s>, <unk>).
Imported n-grams are completed under prefixes and suffixes (the reader's lookups rely on it): a missing
one is added with exactly the probability that backoff gives it and a backoff weight of 1, so no
probability changes.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import IO

import numpy as np

from corrector.evidence.char_lm import BOS, N_SPECIALS, SPECIALS, UNK, CharLM, key_offsets, token_name
from corrector.evidence.char_lm_base import pack

LN10 = math.log(10.0)
ARPA_BOS_LOG10 = -99.0


def token_char(tok: str) -> str | None:
    if len(tok) == 1:
        return tok
    if tok.startswith("<U+") and tok.endswith(">"):
        try:
            return chr(int(tok[3:-1], 16))
        except ValueError:
            return None
    return None


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_arpa(path: Path) -> tuple[int, list[list[tuple[float, tuple[str, ...], float]]]]:
    """(order, per order k-1: [(log10 p, tokens, log10 bow)])."""
    counts: dict[int, int] = {}
    grams: list[list[tuple[float, tuple[str, ...], float]]] = []
    k = 0
    with _open(path) as f:
        for raw in f:
            line = raw.strip()
            if not line:
                continue
            if line.startswith("ngram ") and "=" in line and k == 0:
                a, b = line[6:].split("=")
                counts[int(a)] = int(b)
            elif line.startswith("\\") and line.endswith("-grams:"):
                k = int(line[1:].split("-")[0])
                while len(grams) < k:
                    grams.append([])
            elif line == "\\end\\":
                break
            elif k:
                parts = line.split()
                if len(parts) == k + 1:
                    grams[k - 1].append((float(parts[0]), tuple(parts[1:]), 0.0))
                elif len(parts) == k + 2:
                    grams[k - 1].append((float(parts[0]), tuple(parts[1:k + 1]), float(parts[k + 1])))
                else:
                    raise SystemExit(f"{path}: malformed {k}-gram line: {line[:80]!r}")
    if not grams or not grams[0]:
        raise SystemExit(f"{path}: no \\1-grams: section; not an ARPA file?")
    for k, n in counts.items():
        if k <= len(grams) and len(grams[k - 1]) != n:
            raise SystemExit(f"{path}: header says {n} {k}-grams, found {len(grams[k - 1])}")
    return len(grams), grams


def _lookup(keys: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos = np.minimum(np.searchsorted(keys, q), max(keys.size - 1, 0))
    return (keys[pos] == q) if keys.size else np.zeros(q.size, dtype=bool), pos


def backoff_logprob(keys: list[np.ndarray], logp: list[np.ndarray], logbow: list[np.ndarray],
                    ids: np.ndarray, base: int) -> np.ndarray:
    """ARPA semantics for (M, k) id rows, with no closure assumption (sorted keys + searchsorted)."""
    m, k = ids.shape
    out = np.zeros(m, dtype=np.float64)
    acc = np.zeros(m, dtype=np.float64)
    todo = np.ones(m, dtype=bool)
    for j in range(k):
        n = k - j
        rows = np.flatnonzero(todo)
        if n == 1:
            out[rows] = acc[rows] + logp[0][ids[rows, -1]]
            break
        f, pos = _lookup(keys[n - 1], pack(ids[rows, j:], base))
        out[rows[f]] = acc[rows[f]] + logp[n - 1][pos[f]]
        todo[rows[f]] = False
        rows = rows[~f]
        if n - 1 == 1:
            acc[rows] += logbow[0][ids[rows, -2]]
        else:
            fc, pc = _lookup(keys[n - 2], pack(ids[rows, j:k - 1], base))
            acc[rows[fc]] += logbow[n - 2][pc[fc]]
    return out


def arpa_to_tables(path: Path):  # -> (Tables, vocab code points, order)
    from corrector.evidence.char_lm_estimate import UNIGRAM_BOS_LOGPROB, Tables

    order, grams = read_arpa(path)
    specials = {s: i for i, s in enumerate(SPECIALS)}
    chars = []
    for lp10, (tok,), _ in grams[0]:
        if tok in specials:
            continue
        ch = token_char(tok)
        if ch is None:
            raise SystemExit(f"{path}: token {tok!r} is not a single character: not a character LM")
        chars.append((-lp10, ord(ch)))
    chars.sort()
    vocab_cps = np.array([cp for _, cp in chars], dtype=np.int32)
    base = vocab_cps.size + N_SPECIALS
    key_offsets(order, base)  # raises if the keys do not fit
    tok_id = dict(specials)
    tok_id.update({token_name(cp): i + N_SPECIALS for i, cp in enumerate(vocab_cps.tolist())})
    tok_id.update({chr(cp): i + N_SPECIALS for i, cp in enumerate(vocab_cps.tolist())})
    keys: list[np.ndarray] = []
    logp: list[np.ndarray] = []
    logbow: list[np.ndarray] = []
    for k in range(1, order + 1):
        g = grams[k - 1]
        try:
            ids = np.array([[tok_id[t] for t in toks] for _, toks, _ in g], dtype=np.int64).reshape(len(g), k)
        except KeyError as e:
            raise SystemExit(f"{path}: {k}-gram token {e} is not among the unigrams") from e
        lp = np.array([x[0] for x in g], dtype=np.float64) * LN10
        lb = np.array([x[2] for x in g], dtype=np.float64) * LN10
        if k == 1:
            full_p = np.full(base, UNIGRAM_BOS_LOGPROB)
            full_b = np.zeros(base)
            full_p[ids[:, 0]] = lp
            full_b[ids[:, 0]] = lb
            full_p[BOS] = UNIGRAM_BOS_LOGPROB
            if UNK not in ids[:, 0]:
                full_p[UNK] = lp.min()
            keys.append(np.arange(base, dtype=np.uint64))
            logp.append(full_p)
            logbow.append(full_b)
            continue
        key = pack(ids, base)
        srt = np.argsort(key)
        keys.append(key[srt])
        logp.append(lp[srt])
        logbow.append(lb[srt])
    # complete under prefixes and suffixes, from the top order down
    orig = (list(keys), list(logp), list(logbow))
    added = [0] * (order + 1)
    for k in range(order, 2, -1):
        up = keys[k - 1]
        need = np.unique(np.concatenate((up // np.uint64(base), up % np.uint64(base ** (k - 1)))))
        have, _ = _lookup(keys[k - 2], need)
        miss = need[~have]
        if miss.size:
            digits = np.stack([(miss // np.uint64(base ** (k - 2 - j))) % np.uint64(base) for j in range(k - 1)],
                              axis=1).astype(np.int64)
            lp_miss = backoff_logprob(*orig, digits, base)
            allk = np.concatenate((keys[k - 2], miss))
            srt = np.argsort(allk)
            keys[k - 2] = allk[srt]
            logp[k - 2] = np.concatenate((logp[k - 2], lp_miss))[srt]
            logbow[k - 2] = np.concatenate((logbow[k - 2], np.zeros(miss.size)))[srt]
            added[k - 1] = int(miss.size)
    return Tables(keys, logp, logbow, []), vocab_cps, order, added


def write_arpa(lm_dir: Path, out: Path) -> dict[int, int]:
    """Every stored n-gram of an LM directory as ARPA text (quantised values as their codebook value)."""
    lm = CharLM.load(lm_dir)
    tokens = list(SPECIALS) + [token_name(c) for c in lm.codepoints[N_SPECIALS:].tolist()]
    per_order = lm.stored_ngrams()
    counts = {k: int(ids.shape[0]) for k, (ids, _, _) in per_order.items()}
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(out, "wt", encoding="utf-8") as f:  # type: ignore[operator]
        f.write("\n\\data\\\n")
        for k in sorted(per_order):
            f.write(f"ngram {k}={counts[k]}\n")
        for k in sorted(per_order):
            ids, lp, lb = per_order[k]
            f.write(f"\n\\{k}-grams:\n")
            lp10 = lp.astype(np.float64) / LN10
            lb10 = lb.astype(np.float64) / LN10
            for row, p, b in zip(ids.tolist(), lp10.tolist(), lb10.tolist()):
                if k == 1 and row[0] == BOS:
                    p = ARPA_BOS_LOG10
                words = " ".join(tokens[i] for i in row)
                if k < lm.order:
                    f.write(f"{p:.7g}\t{words}\t{b:.7g}\n")
                else:
                    f.write(f"{p:.7g}\t{words}\n")
        f.write("\n\\end\\\n")
    return counts
