"""Gather and score: every candidate of a whole batch, every feature in batched numpy calls.

A *site* is one editable character of a chunk (a single-token CJK character nobody protected).
Its *choices* are the character itself (``keep``) and its shortlisted candidates; each choice is one
row of the feature matrix, scored with the same features, so the ranker compares like with like.

Candidates come from the static table (graded pinyin, shape, real confusions), the generator's
top-k and the user's confusion pairs; a cheap linear score over the features that need no language
model cuts them to a shortlist, and only the shortlist gets the LM and word features.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .candidates import CandidateTable
from .char_lm import BOS, EOS, PAD
from .similarity import SimilarityTables

FEATURES = ("keep", "gen_lp", "rtd", "lm_gain", "pinyin", "shape", "confusions", "freq", "word", "name", "custom")
CHEAP = ("gen_lp", "pinyin", "shape", "confusions", "freq")  # the shortlist's features
COL = {name: i for i, name in enumerate(FEATURES)}

# common surnames and place-name suffixes, for the name-likeness feature
SURNAMES = set(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢"
    "姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
PLACE_SUFFIXES = set("市县省区镇村乡街路巷港湾岛州府寨庄")


@dataclass
class Sites:
    """Every editable position of a batch of chunks, flattened."""

    chunk: np.ndarray  # (n,) index of the chunk
    char: np.ndarray  # (n,) character position in the chunk
    src: list[str]  # (n) the character there
    src_id: np.ndarray  # (n,) its vocab id
    rtd: np.ndarray  # (n,) the discriminator's P(replaced)
    logprobs: np.ndarray  # (n, V) the generator's log-probabilities there

    def __len__(self) -> int:
        return len(self.src)

    def take(self, keep: np.ndarray) -> Sites:
        """The sites where ``keep`` is true."""
        return Sites(self.chunk[keep], self.char[keep], [s for s, k in zip(self.src, keep) if k],
                     self.src_id[keep], self.rtd[keep], self.logprobs[keep])


@dataclass
class Rows:
    """The choices of every site: one row each, the ``keep`` row first within its site."""

    site: np.ndarray  # (m,) index into Sites
    vid: np.ndarray  # (m,) vocab id of the choice
    X: np.ndarray  # (m, len(FEATURES)) float32

    def __len__(self) -> int:
        return len(self.site)


class Evidence:
    """Everything a choice is scored on except the networks' raw outputs, which come in with the sites."""

    def __init__(self, vocab: Sequence[str], candidates: CandidateTable, tables: SimilarityTables, lm=None):
        from .text import is_cjk

        self.vocab = list(vocab)
        self.char_id = {t: i for i, t in enumerate(self.vocab) if len(t) == 1}
        self.table = candidates
        self.lm = lm
        self.cand_vid = np.array([self.char_id.get(c, -1) for c in candidates.candidates], dtype=np.int64)
        self.logfreq = np.array([math.log1p(tables.frequency(t)) if len(t) == 1 else 0.0 for t in self.vocab],
                                dtype=np.float32)
        # the generator may propose any frequent CJK character (any CJK character when the bundle has no
        # character frequencies, e.g. one exported from a Hugging Face pair)
        freq = np.array([tables.frequency(t) if len(t) == 1 else 0 for t in self.vocab])
        cjk = np.array([len(t) == 1 and is_cjk(t) for t in self.vocab])
        self.proposable = cjk & (freq > 0) if (freq > 0).any() else cjk
        self.proposable_vid = np.flatnonzero(self.proposable)
        self._words: dict[str, int] | None = None
        if lm is not None:  # vocab id -> LM id
            singles = [t if len(t) == 1 else "\x00" for t in self.vocab]
            self.lm_vid = lm.encode("".join(singles)).astype(np.int32)

    # ---- gather -------------------------------------------------------------------------------------

    def shortlist(self, sites: Sites, weights: dict[str, float], size: int, top_k: int,
                  custom: dict[str, set[str]]) -> tuple[np.ndarray, ...]:
        """(site, vid, static row index or -1, custom flag) of each site's ``size`` best candidates by the cheap score."""
        n = len(sites)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, np.zeros(0, bool)
        # static candidates: concatenated CSR slices
        slices = [self.table.lookup(s) for s in sites.src]
        starts = np.array([sl.start for sl in slices], dtype=np.int64)
        lens = np.array([sl.stop - sl.start for sl in slices], dtype=np.int64)
        site_s = np.repeat(np.arange(n), lens)
        idx_s = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(lens.sum())
        vid_s = self.cand_vid[idx_s]
        # dynamic: the generator's top-k proposable characters, and the user's pairs
        k = min(top_k, len(self.proposable_vid))
        if k:
            lp = sites.logprobs[:, self.proposable_vid]
            top = self.proposable_vid[np.argpartition(-lp, k - 1, axis=1)[:, :k]]
        else:
            top = np.zeros((n, 0), np.int64)
        site_d = np.repeat(np.arange(n), top.shape[1])
        vid_d = top.reshape(-1)
        cs, cv = [], []
        for i, s in enumerate(sites.src):
            for c in custom.get(s, ()):
                if c in self.char_id:
                    cs.append(i)
                    cv.append(self.char_id[c])
        site = np.concatenate([site_s, site_d, np.array(cs, np.int64)])
        vid = np.concatenate([vid_s, vid_d, np.array(cv, np.int64)])
        static = np.concatenate([idx_s, np.full(len(site_d) + len(cs), -1, np.int64)])
        is_custom = np.concatenate([np.zeros(len(site_s) + len(site_d), bool), np.ones(len(cs), bool)])
        keep = (vid >= 0) & (vid != sites.src_id[site])
        site, vid, static, is_custom = site[keep], vid[keep], static[keep], is_custom[keep]
        # one row per (site, vid): the static one when there is one, custom flags merged
        key = site * len(self.vocab) + vid
        order = np.lexsort((static < 0, key))
        key, site, vid, static, is_custom = key[order], site[order], vid[order], static[order], is_custom[order]
        first = np.concatenate(([True], key[1:] != key[:-1]))[: len(key)]  # no candidates at all: empty
        custom_any = np.logical_or.reduceat(is_custom, np.flatnonzero(first)) if len(key) else is_custom
        site, vid, static, is_custom = site[first], vid[first], static[first], custom_any
        # the cheap score, then the best ``size`` per site (custom pairs always stay)
        cheap = self.static_features(sites, site, vid, static)
        score = sum(weights.get(name, 0.0) * cheap[name] for name in CHEAP) + 1e6 * is_custom
        order = np.lexsort((-score, site))
        site, vid, static, is_custom = site[order], vid[order], static[order], is_custom[order]
        group_start = np.searchsorted(site, site, side="left")
        rank = np.arange(len(site)) - group_start
        keep = (rank < size) | is_custom  # more custom pairs than ``size`` for one character: all stay
        return site[keep], vid[keep], static[keep], is_custom[keep]

    def static_features(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict:
        has = static >= 0

        def at(col: np.ndarray) -> np.ndarray:  # the static table's column; 0 for rows not from it
            out = np.zeros(len(static), dtype=np.float32)
            out[has] = col[static[has]]
            return out

        return {
            "gen_lp": sites.logprobs[site, vid],
            "pinyin": at(self.table.pinyin),
            "shape": at(self.table.shape),
            "confusions": np.log1p(at(self.table.count)),
            "freq": self.logfreq[vid] - self.logfreq[sites.src_id[site]],
        }

    # ---- score --------------------------------------------------------------------------------------

    def rows(self, sites: Sites, texts: Sequence[str], shortlist: tuple[np.ndarray, ...],
             lm_ids: list[np.ndarray] | None) -> Rows:
        """The feature matrix: each site's keep row, then its shortlisted candidates."""
        c_site, c_vid, c_static, c_custom = shortlist
        n = len(sites)
        site = np.concatenate([np.arange(n), c_site])
        vid = np.concatenate([sites.src_id, c_vid])
        static = np.concatenate([np.full(n, -1, np.int64), c_static])
        is_keep = np.concatenate([np.ones(n, bool), np.zeros(len(c_site), bool)])
        order = np.lexsort((~is_keep, site))
        site, vid, static, is_keep = site[order], vid[order], static[order], is_keep[order]
        custom = np.concatenate([np.zeros(n, bool), c_custom])[order]
        X = np.zeros((len(site), len(FEATURES)), dtype=np.float32)
        cheap = self.static_features(sites, site, vid, static)
        for name, col in cheap.items():
            X[:, COL[name]] = col
        X[is_keep, COL["pinyin"]] = 1.0
        X[is_keep, COL["shape"]] = 1.0
        X[:, COL["keep"]] = is_keep
        X[:, COL["rtd"]] = np.where(is_keep, 0.0, sites.rtd[site])
        X[:, COL["custom"]] = custom
        name_like = np.array([_name_like(texts[c], i) for c, i in zip(sites.chunk, sites.char)], dtype=np.float32)
        X[:, COL["name"]] = np.where(is_keep, 0.0, name_like[site] if n else 0.0)
        X[:, COL["word"]] = self._word_scores(sites, texts, site, vid)
        rows = Rows(site, vid, X)
        if lm_ids is not None and self.lm is not None:
            X[:, COL["lm_gain"]] = self.lm_gain(sites, rows, lm_ids, np.ones(len(rows), bool))
        return rows

    def _word_scores(self, sites: Sites, texts: Sequence[str], site: np.ndarray, vid: np.ndarray) -> np.ndarray:
        """Best log(1 + jieba frequency) of a 2- or 3-character word through the choice."""
        words = self._dictionary()
        out = np.zeros(len(site), dtype=np.float32)
        vocab = self.vocab
        ctx = []
        for c, i in zip(sites.chunk, sites.char):
            t = texts[c]
            ctx.append((t[max(i - 2, 0) : i], t[i + 1 : i + 3]))
        for r, (s, v) in enumerate(zip(site.tolist(), vid.tolist())):
            left, right = ctx[s]
            ch = vocab[v]
            best = 0
            for w in (left[-1:] + ch, ch + right[:1], left[-2:] + ch, left[-1:] + ch + right[:1], ch + right[:2]):
                if len(w) > 1:
                    f = words.get(w, 0)
                    if f > best:
                        best = f
            out[r] = best
        return np.log1p(out)

    def _dictionary(self) -> dict[str, int]:
        if self._words is None:
            import logging

            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.dt.check_initialized()
            self._words = jieba.dt.FREQ
        return self._words

    def lm_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        assert self.lm is not None
        return [self.lm.encode(t) for t in texts]

    def lm_gain(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> np.ndarray:
        """For the rows in ``which``: log P(text with the choice) − log P(text as it is now), over the
        ``order`` LM windows the position takes part in. Returns a full-length column (0 elsewhere)."""
        lm = self.lm
        assert lm is not None
        out = np.zeros(len(rows), dtype=np.float32)
        sel = np.flatnonzero(which)
        if len(sel) == 0:
            return out
        n = lm.order
        chunks = sorted({int(c) for c in sites.chunk[rows.site[sel]]})
        slot = {c: k for k, c in enumerate(chunks)}
        width = max(len(lm_ids[c]) for c in chunks) + 2 * n + 1
        M = np.full((len(chunks), width), PAD, dtype=np.int32)
        length = np.zeros(len(chunks), dtype=np.int64)
        for c, j in slot.items():
            ids = lm_ids[c]
            M[j, n - 1] = BOS
            M[j, n : n + len(ids)] = ids
            M[j, n + len(ids)] = EOS
            length[j] = len(ids)
        s = rows.site[sel]
        k = np.array([slot[int(c)] for c in sites.chunk[s]], dtype=np.int64)
        q = n + sites.char[s]  # the choice's coordinate in M
        t = q[:, None] + np.arange(n)[None, :]  # the n targets whose windows contain q
        valid = t <= (n + length[k])[:, None]  # up to and including </s>
        idx = t[:, :, None] + np.arange(-(n - 1), 1)[None, None, :]
        idx = np.minimum(idx, width - 1)
        W = M[k[:, None, None], idx]
        new_ids = self.lm_vid[rows.vid[sel]]
        W = np.where(idx == q[:, None, None], new_ids[:, None, None], W)
        filler = np.array([PAD] * (n - 1) + [EOS], dtype=np.int32)  # windows past </s>: scored, then masked
        W = np.where(valid[:, :, None], W, filler[None, None, :])
        lp = lm.logprob(W.reshape(-1, n)).reshape(len(sel), n)
        total = np.zeros(len(rows), dtype=np.float64)
        total[sel] = np.where(valid, lp, 0.0).sum(1)
        keep_row = np.searchsorted(rows.site, rows.site[sel], side="left")  # each site's keep row comes first
        out[sel] = total[sel] - total[keep_row]
        return out


def _name_like(text: str, i: int) -> float:
    """1 when the character may belong to a name: one or two after a common surname, or before a
    place-name suffix."""
    if (i >= 1 and text[i - 1] in SURNAMES) or (i >= 2 and text[i - 2] in SURNAMES):
        return 1.0
    return 1.0 if i + 1 < len(text) and text[i + 1] in PLACE_SUFFIXES else 0.0
