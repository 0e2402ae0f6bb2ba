"""Gather and score: every candidate of a whole batch, every feature in batched numpy calls.

A *site* is one editable character of a chunk (a single-token CJK character nobody protected).
Its *choices* are the character itself (``keep``) and its shortlisted candidates; each choice is one
row of the feature matrix, scored with the same features, so the ranker compares like with like.

Candidates come from the static table (graded pinyin, shape, real confusions), the generator's
top-k and the user's confusion pairs; a cheap linear score over the features that need no language
model cuts them to a shortlist, and only the shortlist gets the LM and word features.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from .candidates import CandidateTable
from .char_lm import BOS, EOS, PAD
from .dictionary import WordTable
from .kept_forms import CharIds, KeptForms, kept_word_value, seen_value, word_key
from .lookup import lookup_sorted
from .runtime import LogProbs
from .similarity import SimilarityTables, fuzzy_key, split_reading

FEATURES = ("keep", "gen_lp", "rtd", "lm_gain", "pinyin", "shape", "confusions", "error_rate", "freq", "word", "name",
            "custom", "seen", "seen_max", "pair", "kept_word")
# seen (keep rows only): log(1 + how often the character's bigrams with its neighbours, as written, were
# written correctly in the real training pairs; the rarer of the two): a form those pairs keep as
# correct (甚么, 报导, 部份 in Taiwan-style text) is evidence against an edit that the corpus LM alone wants.
# seen_max: the same with the commoner of the two, so that a kept word form (甚么: kept 94 times in
# sighan_train, corrected 3) counts whatever stands on its other side
# pair (candidate rows only, with the LM): the LM gain of writing the candidate together with its neighbour's
# counterpart in a frequent dictionary word that sounds like the two characters as written (建缸 → 健康,
# 心腹 → 幸福: an IME slip of a whole word, which neither single-character edit fixes alone); 0 when none
# kept_word (keep rows only): of the two- and three-character words through the character as written that the
# real training pairs counted, the best log((times kept as written + 1) / (times changed + 1)): a word form the
# annotators keep (报导 kept 3 times, changed 0; 甚么 76 and 7) is evidence against changing it; 0 when none
# (corrector/kept_forms.py)
PAIR_MIN_FREQ = 200  # jieba frequency a word needs to be proposed as a pair (61% of the real training pairs' two-character
# errors are words this frequent; 50: 66%, with twice the candidates)
CHEAP = ("gen_lp", "pinyin", "shape", "confusions", "error_rate", "freq")  # the shortlist's features
# error_rate: log of (times the source was written for the candidate + a) / (times the source was written + b)
# in the real training pairs: a character written correctly thousands of times (著, 甚) earns a low rate
RATE_A, RATE_B = 0.5, 50.0
COL = {name: i for i, name in enumerate(FEATURES)}
GEN_MARGIN = 8.0  # the generator proposes characters within this many nats of its best guess

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
    logprobs: LogProbs  # (n, V) the generator's log-probabilities there

    def __len__(self) -> int:
        return len(self.src)

    def take(self, keep: np.ndarray) -> Sites:
        """The sites where ``keep`` is true."""
        return Sites(self.chunk[keep], self.char[keep], [s for s, k in zip(self.src, keep) if k],
                     self.src_id[keep], self.rtd[keep], self.logprobs.take(keep))


@dataclass
class WordPairs:
    """Adjacent sites a (then a + 1) and a dictionary word (x, y) to write over them, both characters changed."""

    a: np.ndarray  # (p,) index into Sites of the first character
    x: np.ndarray  # (p,) vocab id written there
    y: np.ndarray  # (p,) vocab id written at the next site (a + 1)

    def __len__(self) -> int:
        return len(self.a)


@dataclass
class Rows:
    """The choices of every site: one row each, the ``keep`` row first within its site."""

    site: np.ndarray  # (m,) index into Sites
    vid: np.ndarray  # (m,) vocab id of the choice
    X: np.ndarray  # (m, len(FEATURES)) float32
    pairs: WordPairs | None = None  # the word pairs whose candidates are among the rows (``pair`` feature)

    def __len__(self) -> int:
        return len(self.site)


class Evidence:
    """Everything a choice is scored on except the networks' raw outputs, which come in with the sites."""

    def __init__(self, vocab: Sequence[str], candidates: CandidateTable, tables: SimilarityTables, lm=None,
                 words: WordTable | None = None):
        """``words``: jieba's words as the bundle stores them (``corrector.dictionary``); None: read from jieba
        at first use."""
        from .text import is_cjk

        self.vocab = list(vocab)
        self.char_id = {t: i for i, t in enumerate(self.vocab) if len(t) == 1}
        self.table = candidates
        self.lm = lm
        char_ids = CharIds(self.char_id)  # vectorised char_id lookups
        self.cand_vid = char_ids(candidates.candidate_chars())
        self.logfreq = np.array([math.log1p(tables.frequency(t)) if len(t) == 1 else 0.0 for t in self.vocab],
                                dtype=np.float32)
        # the generator may propose any frequent CJK character (any CJK character when the bundle has no
        # character frequencies, e.g. one exported from a Hugging Face pair)
        freq = np.array([tables.frequency(t) if len(t) == 1 else 0 for t in self.vocab])
        cjk = np.array([len(t) == 1 and is_cjk(t) for t in self.vocab])
        self.proposable = cjk & (freq > 0) if (freq > 0).any() else cjk
        # the word forms the real training pairs keep: seen, seen_max, kept_word
        self.kept = KeptForms(candidates, char_ids, len(self.vocab))
        # per vocab id: how often the character was written in the real training pairs (error_rate's denominator)
        self.written = np.array([candidates.written_count(t) if len(t) == 1 else 0.0 for t in self.vocab],
                                dtype=np.float32)
        ids = np.flatnonzero(self.proposable)
        self.proposable_span = (int(ids.min()), int(ids.max()) + 1) if len(ids) else (0, 0)
        self._words = words
        self.tables = tables
        self._pair_index: dict[tuple[str, str], list[tuple[int, int]]] | None = None
        self._keys_of: dict[str, tuple[str, ...]] = {}
        self._wkeys: tuple[np.ndarray, ...] | None = None
        V = len(self.vocab)
        keys = np.repeat(np.arange(len(candidates.offsets) - 1, dtype=np.int64) * V, np.diff(candidates.offsets))
        keys += self.cand_vid  # row * V + vid, in place: two fewer arrays of the table's length
        keys[self.cand_vid < 0] = -1
        self.table_order = np.argsort(keys, kind="stable")
        self.table_keys = keys[self.table_order]
        self._traditional = np.zeros(len(self.vocab), dtype=np.int8)  # see script_filter: 0 unknown, 1 no, 2 yes
        self._variant_keys: np.ndarray | None = None  # see script_filter
        if lm is not None:
            self.lm_vid = _vocab_lm_ids(self.vocab, lm)

    def script_filter(self, vids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(for each of ``vids``: a traditional-only character, which simplified text never writes; the sorted keys
        src * V + vid of the table's script variants that involve one: 於/于, 後/后). Two simplified characters
        with different uses (着/著) are candidates of each other. Each character is looked up with OpenCC the first
        time it is asked about (the whole vocabulary takes a fifth of a second: too long for a first answer)."""
        if self._variant_keys is None:
            V = len(self.vocab)
            pairs = [(self.char_id[a], self.char_id[b]) for a, b in self.table.variants
                     if a in self.char_id and b in self.char_id]
            traditional = self._is_traditional(np.array(pairs, dtype=np.int64).reshape(-1, 2)).tolist()
            self._variant_keys = np.array(sorted(a * V + b for (a, b), (ta, tb) in zip(pairs, traditional) if ta or tb),
                                          dtype=np.int64)
        return self._is_traditional(vids), self._variant_keys

    def _is_traditional(self, vids: np.ndarray) -> np.ndarray:
        from .script import traditional_only

        todo = np.unique(vids[self._traditional[vids] == 0])
        if len(todo):
            self._traditional[todo] = [2 if len(self.vocab[i]) == 1 and traditional_only(self.vocab[i]) else 1
                                       for i in todo.tolist()]
        return self._traditional[vids] == 2

    def with_lm(self, lm) -> Evidence:
        """The same evidence over another character LM (None: without one); the LM-free tables are shared."""
        other = copy.copy(self)
        other.lm = lm
        if lm is not None:
            other.lm_vid = _vocab_lm_ids(self.vocab, lm)
        elif hasattr(other, "lm_vid"):
            del other.lm_vid
        return other

    # ---- gather -------------------------------------------------------------------------------------

    def shortlist(self, sites: Sites, weights: dict[str, float], size: int, top_k: int,
                  custom: dict[str, set[str]], pairs: WordPairs | None = None) -> tuple[np.ndarray, ...]:
        """(site, vid, static row index or -1, custom flag) of each site's ``size`` best candidates by the cheap
        score, plus every character of ``pairs`` (which, like the user's pairs, the size never cuts)."""
        n = len(sites)
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, np.zeros(0, bool)
        # static candidates: each site's table slice, cut to its ``size`` best by the cheap score
        src_row = np.array([self.table.row.get(s, -1) for s in sites.src], dtype=np.int64)
        offsets = np.asarray(self.table.offsets, dtype=np.int64)
        safe = np.where(src_row >= 0, src_row, 0) if len(offsets) > 1 else np.zeros(n, np.int64)
        ok = (src_row >= 0) & (len(offsets) > 1)
        starts = np.where(ok, offsets[safe], 0)
        lens = np.where(ok, offsets[np.minimum(safe + 1, len(offsets) - 1)] - starts, 0)
        site_s = np.repeat(np.arange(n), lens)
        idx_s = np.repeat(starts - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(lens.sum())
        vid_s = self.cand_vid[idx_s]
        score_s = self._cheap_score(sites, site_s, vid_s, idx_s, weights)
        score_s[(vid_s < 0) | (vid_s == sites.src_id[site_s])] = -np.inf
        keep_s = _top_per_segment(score_s, lens, size) & np.isfinite(score_s)
        site_s, vid_s, idx_s = site_s[keep_s], vid_s[keep_s], idx_s[keep_s]
        # dynamic: the generator's top-k proposable characters (with their table row when they have one) ...
        site_d, vid_d = self.generator_top(sites.logprobs, top_k)
        idx_d = self._table_index(src_row[site_d], vid_d)
        # ... and the user's pairs
        cs, cv = [], []
        for i, s in enumerate(sites.src):
            for c in custom.get(s, ()):
                if c in self.char_id:
                    cs.append(i)
                    cv.append(self.char_id[c])
        site_c, vid_c = np.array(cs, np.int64), np.array(cv, np.int64)
        # ... and both characters of each word pair
        no_pairs = WordPairs(*(np.zeros(0, np.int64),) * 3)
        p = pairs if pairs is not None else no_pairs
        site_p, vid_p = np.concatenate([p.a, p.a + 1]), np.concatenate([p.x, p.y])
        site = np.concatenate([site_s, site_d, site_c, site_p])
        vid = np.concatenate([vid_s, vid_d, vid_c, vid_p])
        static = np.concatenate([idx_s, idx_d, self._table_index(src_row[site_c], vid_c),
                                 self._table_index(src_row[site_p], vid_p)])
        is_custom = np.concatenate([np.zeros(len(site_s) + len(site_d), bool), np.ones(len(site_c), bool),
                                    np.zeros(len(site_p), bool)])
        forced = np.concatenate([np.zeros(len(site_s) + len(site_d) + len(site_c), bool), np.ones(len(site_p), bool)])
        keep = (vid >= 0) & (vid != sites.src_id[site])
        traditional, variant_keys = self.script_filter(np.maximum(vid, 0))  # the user's own pairs excepted: never
        keep &= is_custom | ~traditional  # a traditional-only character, never another script's form of one
        if len(variant_keys):
            keep &= is_custom | ~np.isin(sites.src_id[site] * len(self.vocab) + vid, variant_keys)
        site, vid, static, is_custom, forced = site[keep], vid[keep], static[keep], is_custom[keep], forced[keep]
        # one row per (site, vid), custom and forced flags merged
        key = site * len(self.vocab) + vid
        order = np.argsort(key, kind="stable")
        key, site, vid, static = key[order], site[order], vid[order], static[order]
        is_custom, forced = is_custom[order], forced[order]
        first = np.concatenate(([True], key[1:] != key[:-1]))[: len(key)]  # no candidates at all: empty
        if len(key):
            starts = np.flatnonzero(first)
            is_custom, forced = np.logical_or.reduceat(is_custom, starts), np.logical_or.reduceat(forced, starts)
        site, vid, static = site[first], vid[first], static[first]
        # the best ``size`` per site by the cheap score (custom pairs always stay)
        score = self._cheap_score(sites, site, vid, static, weights) + 1e6 * is_custom
        order = np.lexsort((vid, -score, site))
        site, vid, static, is_custom, forced = site[order], vid[order], static[order], is_custom[order], forced[order]
        group_start = np.searchsorted(site, site, side="left")
        rank = np.arange(len(site)) - group_start
        keep = (rank < size) | is_custom | forced  # more custom pairs than ``size`` for one character: all stay
        return site[keep], vid[keep], static[keep], is_custom[keep]

    def _cheap_score(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray,
                     weights: dict[str, float]) -> np.ndarray:
        feats = self.static_features(sites, site, np.maximum(vid, 0), static)
        return sum(weights.get(name, 0.0) * feats[name] for name in CHEAP).astype(np.float64)

    def _table_index(self, src_row: np.ndarray, vid: np.ndarray) -> np.ndarray:
        """The table entry of each (source row, candidate vid) pair, -1 where the table has none."""
        if len(vid) == 0 or len(self.table_keys) == 0:
            return np.full(len(vid), -1, np.int64)
        key = src_row * len(self.vocab) + vid
        pos = np.minimum(np.searchsorted(self.table_keys, key), len(self.table_keys) - 1)
        found = (self.table_keys[pos] == key) & (src_row >= 0)
        return np.where(found, self.table_order[pos], -1)

    def generator_top(self, logprobs: LogProbs, top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """(site, vid) of each site's ``top_k`` most probable proposable characters, among those within
        GEN_MARGIN nats of the site's best (far less work than a partition over the whole vocabulary)."""
        if top_k == 0 or len(logprobs) == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        lo, hi = self.proposable_span  # proposable ids all lie in [lo, hi): scan only that window
        site, vid = np.nonzero(logprobs.logits[:, lo:hi] > (logprobs.best - GEN_MARGIN)[:, None])
        vid = vid + lo
        ok = self.proposable[vid]
        site, vid = site[ok], vid[ok]
        lp = logprobs.at(site, vid)
        order = np.lexsort((vid, -lp, site))
        site, vid = site[order], vid[order]
        rank = np.arange(len(site)) - np.searchsorted(site, site, side="left")
        keep = rank < top_k
        return site[keep].astype(np.int64), vid[keep].astype(np.int64)

    def static_features(self, sites: Sites, site: np.ndarray, vid: np.ndarray, static: np.ndarray) -> dict:
        has = static >= 0

        def at(col: np.ndarray) -> np.ndarray:  # the static table's column; 0 for rows not from it
            out = np.zeros(len(static), dtype=np.float32)
            out[has] = col[static[has]]
            return out

        count = at(self.table.count)
        written = self.written[sites.src_id[site]]
        return {
            "gen_lp": sites.logprobs.at(site, vid),
            "pinyin": at(self.table.pinyin),
            "shape": at(self.table.shape),
            "confusions": np.log1p(count),
            "error_rate": np.log((count + RATE_A) / (written + RATE_B)),
            "freq": self.logfreq[vid] - self.logfreq[sites.src_id[site]],
        }

    # ---- score --------------------------------------------------------------------------------------

    def rows(self, sites: Sites, texts: Sequence[str], shortlist: tuple[np.ndarray, ...],
             lm_ids: list[np.ndarray] | None, pairs: WordPairs | None = None) -> Rows:
        """The feature matrix: each site's keep row, then its shortlisted candidates (``pairs``: the word pairs
        the shortlist was given, for the ``pair`` feature)."""
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
        X[is_keep, COL["error_rate"]] = 0.0
        X[:, COL["keep"]] = is_keep
        X[:, COL["rtd"]] = np.where(is_keep, 0.0, sites.rtd[site])
        X[:, COL["custom"]] = custom
        name_like = np.array([_name_like(texts[c], i) for c, i in zip(sites.chunk, sites.char)], dtype=np.float32)
        X[:, COL["name"]] = np.where(is_keep, 0.0, name_like[site] if n else 0.0)
        T = self._char_ids(sites, texts)  # the chunks as vocab ids, for every word and bigram lookup below
        X[:, COL["word"]] = self._word_scores(sites, T, site, vid)
        if self.kept.has_bigrams and n:
            self.set_seen(X, is_keep, site, *self.kept.bigram_counts(T, sites.chunk, sites.char, sites.src_id))
        if self.kept.has_words and n:
            kept_word = kept_word_value(*self.kept.word_counts(T, sites.chunk, sites.char))
            X[:, COL["kept_word"]] = np.where(is_keep, kept_word[site], 0.0)
        rows = Rows(site, vid, X, pairs)
        if lm_ids is not None and self.lm is not None:
            X[:, COL["lm_gain"]] = self.lm_gain(sites, rows, lm_ids, np.ones(len(rows), bool))
            X[:, COL["pair"]] = self.pair_gain(sites, rows, lm_ids)
        return rows

    @staticmethod
    def set_seen(X: np.ndarray, is_keep: np.ndarray, site: np.ndarray, left: np.ndarray, right: np.ndarray) -> None:
        """The keep rows' ``seen`` and ``seen_max`` from each site's (left, right) bigram counts; 0 elsewhere."""
        X[:, COL["seen"]] = np.where(is_keep, seen_value(left, right)[site], 0.0)
        X[:, COL["seen_max"]] = np.where(is_keep, seen_value(left, right, np.maximum)[site], 0.0)

    def _char_ids(self, sites: Sites, texts: Sequence[str]) -> np.ndarray:
        """The chunks' characters as vocab ids, two columns of -1 on each side (and -1 where not in the vocab)."""
        n_chunks = int(sites.chunk.max()) + 1 if len(sites) else 0
        width = max((len(t) for t in texts[:n_chunks]), default=0) + 4
        T = np.full((max(n_chunks, 1), width), -1, dtype=np.int64)
        for c in range(n_chunks):
            T[c, 2 : 2 + len(texts[c])] = [self.char_id.get(ch, -1) for ch in texts[c]]
        return T

    def seen_counts(self, sites: Sites, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per site: how often its bigram with the left and with the right neighbour, as written, was written
        correctly in the real training pairs (-1 where there is no such neighbour)."""
        return self.kept.bigram_counts(self._char_ids(sites, texts), sites.chunk, sites.char, sites.src_id)

    def word_counts(self, sites: Sites, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(kept, changed), each (sites, 5): the training pairs' counts of the words through each site as written
        (:meth:`KeptForms.word_counts`)."""
        return self.kept.word_counts(self._char_ids(sites, texts), sites.chunk, sites.char)

    def _word_scores(self, sites: Sites, T: np.ndarray, site: np.ndarray, vid: np.ndarray) -> np.ndarray:
        """Best log(1 + jieba frequency) of a 2- or 3-character word through the choice (vectorised:
        the dictionary's words as sorted integer keys; ``T``: :meth:`_char_ids`)."""
        k2, f2, k3, f3 = self._word_keys()
        V = len(self.vocab)
        c, pos = sites.chunk[site], sites.char[site] + 2
        l2, l1, r1, r2 = T[c, pos - 2], T[c, pos - 1], T[c, pos + 1], T[c, pos + 2]
        out = np.zeros(len(site), dtype=np.float32)
        for ids, keys, freq in (((l1, vid), k2, f2), ((vid, r1), k2, f2), ((l2, l1, vid), k3, f3),
                                ((l1, vid, r1), k3, f3), ((vid, r1, r2), k3, f3)):
            valid = np.all([x >= 0 for x in ids], axis=0)
            out = np.maximum(out, lookup_sorted(keys, freq, np.where(valid, word_key(ids, V), -1)))
        return out

    def _dictionary(self) -> WordTable:
        """jieba's two- and three-character words: the bundle's table, else read from jieba now."""
        if self._words is None:
            self._words = WordTable.from_jieba(self.char_id, len(self.vocab))
        return self._words

    def _word_keys(self) -> tuple[np.ndarray, ...]:
        """(2-character keys, their log(1 + frequency), 3-character keys, theirs), keys sorted."""
        if self._wkeys is None:
            self._wkeys = (*self._dictionary().log_counts(2), *self._dictionary().log_counts(3))
        return self._wkeys

    def lm_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        assert self.lm is not None
        return [self.lm.encode(t) for t in texts]

    def lm_gain(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray], which: np.ndarray) -> np.ndarray:
        """For the rows in ``which``: log P(text with the choice) − log P(text as it is now), over the
        ``order`` LM windows the position takes part in. Returns a full-length column (0 elsewhere)."""
        out = np.zeros(len(rows), dtype=np.float32)
        sel = np.flatnonzero(which)
        if len(sel) == 0:
            return out
        s = rows.site[sel]
        total = np.zeros(len(rows), dtype=np.float64)
        total[sel] = self._window_logprob(sites.chunk[s], sites.char[s], 1, lm_ids, [self.lm_vid[rows.vid[sel]]])
        keep_row = np.searchsorted(rows.site, rows.site[sel], side="left")  # each site's keep row comes first
        out[sel] = total[sel] - total[keep_row]
        return out

    def _window_logprob(self, chunk: np.ndarray, char: np.ndarray, span: int, lm_ids: list[np.ndarray],
                        new: list[np.ndarray]) -> np.ndarray:
        """Per query: the log-probability of the LM windows that contain any of the ``span`` characters from
        ``char`` on in its chunk (as ``lm_ids`` has it), with ``new[j]`` (LM ids) written at ``char + j``."""
        lm = self.lm
        assert lm is not None
        n = lm.order
        chunks = sorted({int(c) for c in chunk})
        slot = {c: k for k, c in enumerate(chunks)}
        width = max(len(lm_ids[c]) for c in chunks) + 2 * n + span
        M = np.full((len(chunks), width), PAD, dtype=np.int32)
        length = np.zeros(len(chunks), dtype=np.int64)
        for c, j in slot.items():
            ids = lm_ids[c]
            M[j, n - 1] = BOS
            M[j, n : n + len(ids)] = ids
            M[j, n + len(ids)] = EOS
            length[j] = len(ids)
        k = np.array([slot[int(c)] for c in chunk], dtype=np.int64)
        q = n + char  # the first changed character's coordinate in M
        t = q[:, None] + np.arange(n + span - 1)[None, :]  # the targets whose windows contain a changed one
        valid = t <= (n + length[k])[:, None]  # up to and including </s>
        idx = t[:, :, None] + np.arange(-(n - 1), 1)[None, None, :]
        idx = np.minimum(idx, width - 1)
        W = M[k[:, None, None], idx]
        for j, ids in enumerate(new):
            W = np.where(idx == (q + j)[:, None, None], ids[:, None, None], W)
        filler = np.array([PAD] * (n - 1) + [EOS], dtype=np.int32)  # windows past </s>: scored, then masked
        W = np.where(valid[:, :, None], W, filler[None, None, :])
        lp = lm.logprob(W.reshape(-1, n)).reshape(len(q), -1)
        return np.where(valid, lp, 0.0).sum(1)

    def pair_gain(self, sites: Sites, rows: Rows, lm_ids: list[np.ndarray]) -> np.ndarray:
        """The ``pair`` column: each candidate row's best LM gain from writing its word pair whole (log P of the
        text with both characters of the word − as it is now), floored at 0; 0 on rows in no pair."""
        out = np.zeros(len(rows), dtype=np.float32)
        p = rows.pairs
        if p is None or not len(p) or self.lm is None:
            return out
        chunk, char = sites.chunk[p.a], sites.char[p.a]
        now = [np.array([lm_ids[c][i + j] for c, i in zip(chunk.tolist(), char.tolist())], dtype=np.int32)
               for j in (0, 1)]  # the two characters as the LM sees them now: both texts scored in one LM call
        both = self._window_logprob(np.concatenate([chunk, chunk]), np.concatenate([char, char]), 2, lm_ids,
                                    [np.concatenate([self.lm_vid[p.x], now[0]]),
                                     np.concatenate([self.lm_vid[p.y], now[1]])])
        gain = both[: len(chunk)] - both[len(chunk) :]
        V = len(self.vocab)
        keys = rows.site * V + rows.vid
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for s, v in ((p.a, p.x), (p.a + 1, p.y)):
            pos = np.minimum(np.searchsorted(sorted_keys, s * V + v), len(keys) - 1)
            found = sorted_keys[pos] == s * V + v
            np.maximum.at(out, order[pos[found]], gain[found].astype(np.float32))
        return out

    def word_pairs(self, sites: Sites) -> WordPairs:
        """Every frequent two-character dictionary word (x, y) that sounds like two adjacent sites' characters
        as written (toneless, fuzzy: ``similarity.fuzzy_key``), with both of them different."""
        adj = np.flatnonzero((sites.chunk[1:] == sites.chunk[:-1]) & (sites.char[1:] == sites.char[:-1] + 1))
        index = self._pairs()
        found: set[tuple[int, int, int]] = set()
        for k in adj.tolist():
            ka, kb = self._fuzzy_keys(sites.src[k]), self._fuzzy_keys(sites.src[k + 1])
            xa, yb = int(sites.src_id[k]), int(sites.src_id[k + 1])
            for key in product(ka, kb):
                found.update((k, x, y) for x, y in index.get(key, ()) if x != xa and y != yb)
        a, x, y = (np.array(col, dtype=np.int64) for col in zip(*sorted(found))) if found else \
            (np.zeros(0, np.int64),) * 3
        return WordPairs(a, x, y)

    def _fuzzy_keys(self, ch: str) -> tuple[str, ...]:
        keys = self._keys_of.get(ch)
        if keys is None:
            keys = tuple(dict.fromkeys(fuzzy_key(split_reading(r)[0]) for r in self.tables.readings(ch)))
            self._keys_of[ch] = keys
        return keys

    def _pairs(self) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """Frequent two-character dictionary words of proposable characters by (fuzzy key, fuzzy key); built
        on first use."""
        if self._pair_index is None:
            index: dict[tuple[str, str], list[tuple[int, int]]] = {}
            words = self._dictionary()
            V = len(self.vocab)
            frequent = words.keys[2][words.counts[2] >= PAIR_MIN_FREQ]
            x_ids, y_ids = frequent // V, frequent % V
            both = self.proposable[x_ids] & self.proposable[y_ids]
            for x, y in zip(x_ids[both].tolist(), y_ids[both].tolist()):
                for key in product(self._fuzzy_keys(self.vocab[x]), self._fuzzy_keys(self.vocab[y])):
                    index.setdefault(key, []).append((x, y))
            self._pair_index = index
        return self._pair_index


def _name_like(text: str, i: int) -> float:
    """1 when the character may belong to a name: one or two after a common surname, or before a
    place-name suffix."""
    if (i >= 1 and text[i - 1] in SURNAMES) or (i >= 2 and text[i - 2] in SURNAMES):
        return 1.0
    return 1.0 if i + 1 < len(text) and text[i + 1] in PLACE_SUFFIXES else 0.0


def _top_per_segment(score: np.ndarray, lens: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the ``k`` highest scores within each consecutive segment of the given lengths."""
    keep = np.zeros(len(score), dtype=bool)
    start = 0
    for n in lens.tolist():
        if n <= k:
            keep[start : start + n] = True
        else:
            seg = score[start : start + n]
            keep[start + np.argpartition(-seg, k - 1)[:k]] = True
        start += n
    return keep


def _vocab_lm_ids(vocab: Sequence[str], lm) -> np.ndarray:
    """Vocab id -> the LM's id of the character (multi-character tokens map to the LM's unknown)."""
    singles = [t if len(t) == 1 else "\x00" for t in vocab]
    return lm.encode("".join(singles)).astype(np.int32)
