"""``Corrector``: gather candidates for a batch, score every feature in batched calls, decide, emit edits."""

from __future__ import annotations

import json
import logging
import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from .bundle import CANDIDATES_DIR, LM_DIR, RANKER, SIMILARITY_DIR, Bundle, Precision
from .candidates import CandidateTable
from .char_lm import CharLM
from .config import CorrectorConfig
from .features import COL, FEATURES, Evidence, Rows, Sites
from .foreign_names import foreign_name_positions, name_chars
from .model_path import ENV_MODEL, default_model_path
from .rank import HEURISTIC, MAX_ROUNDS, RankerWeights, Scorer, best_candidates, choice_probs, pick_round
from .runtime import Device, OnnxNetworks, ProcessLocalPool
from .script import ScriptView, regional_form, restore_edits, simplified_view
from .similarity import SimilarityTables
from .text import sentence_chunk_spans, split_sentences
from .tokenize import Encoded, build_tokenizer, encode_batch, read_vocab_list
from .types import Candidate, CharExplanation, Correction, CorrectorError, Edit, Explanation, Reason

# settings of the earlier hand-set decoder that older bundles' manifests still carry; the ranker replaced them
RETIRED_SETTINGS = frozenset({"mask_suspects", "mask_threshold", "min_similarity", "min_shape_similarity",
                              "sim_weight", "freq_weight", "margin", "confusion_bonus", "verify", "verify_threshold"})
REGIONAL_WINDOW = 2  # protect_regional_forms judges an edit on this many characters either side of it


@dataclass
class _Chunk:
    text_index: int
    start: int  # offset of the chunk in its text
    text: str  # what the model reads: the chunk, in simplified script (issue 13: corrector/script.py)
    enc: Encoded
    protected: set[int] = field(default_factory=set)  # chunk-relative character positions
    edits: list[Edit] = field(default_factory=list)  # chunk-relative positions
    view: ScriptView | None = None  # the original chunk when ``text`` is its simplified view


@dataclass
class _Scored:
    """One batch of chunks after gather and score: its sites, their choices and the choices' probabilities."""

    chunks: list[_Chunk]
    sites: Sites
    rows: Rows
    probs: np.ndarray  # every row's probability when the decoding stopped (its features are those of then)
    first: np.ndarray  # ... and in the first round, before any edit next to it
    decided: dict[int, tuple[int, float]]  # site -> (row, probability) of the edits applied
    capped: set[int] = field(default_factory=set)  # sites above the threshold kept by max_edits
    regional: set[int] = field(default_factory=set)  # sites whose best edit was only a regional form (kept)
    vetoed: dict[int, str] = field(default_factory=dict)  # sites whose best edit was an unreliable pair (kept)
    scorer: Scorer = HEURISTIC.scorer  # what the probabilities came from (its calibration gives confidences)


class Corrector:
    """Chinese spelling correction over one model bundle. Thread-safe after ``load``."""

    def __init__(self, bundle: Bundle, networks: OnnxNetworks, tables: SimilarityTables,
                 config: CorrectorConfig, evidence: Evidence, ranker: RankerWeights):
        self.bundle = bundle
        self.networks = networks
        self.tables = tables
        self.config = config
        self.evidence = evidence
        self.ranker = ranker
        self.tokenizer = build_tokenizer(bundle.vocab_path)
        self.vocab = evidence.vocab
        self.max_tokens = bundle.max_seq_len
        self._ahead = ProcessLocalPool(1, "sites-ahead")  # see _sites_ahead
        self._kept_cache: dict[int, frozenset[str]] = {}  # see _kept_words
        self._names_cache: dict[float, frozenset[str]] = {}  # see _name_chars

    @classmethod
    def load(cls, path: str | Path | None = None, *, device: Device = "auto", threads: int = 0,
             precision: Precision = "auto", lm: str | Path | None = None, **settings: Any) -> Corrector:
        """Open a bundle (default: :func:`default_model_path`); ``settings`` override CorrectorConfig.

        ``precision`` picks the CPU graphs: "fp32", "int8" (the bundle's quantised copies) or "auto"
        (what the bundle's manifest recommends). CUDA always runs the float graphs. ``lm`` replaces the
        bundle's character LM (a directory from ``training.char_lm``, or a KenLM ``.arpa``/``.klm`` file
        when the ``kenlm`` module is installed).
        """
        root = Path(path) if path is not None else default_model_path()
        if path is None and not root.exists():
            raise CorrectorError(
                f"no model bundle found at {root}; pass a bundle directory (--model DIR) or set ${ENV_MODEL}"
            )
        bundle = Bundle.load(root)
        try:
            defaults = {k: v for k, v in bundle.corrector_defaults.items() if k not in RETIRED_SETTINGS}
            config = CorrectorConfig.from_dict({**defaults, **settings})
        except (TypeError, ValueError) as e:
            raise CorrectorError(str(e)) from None
        graphs, cpu_graphs = bundle.onnx_files(precision)
        networks = OnnxNetworks(graphs, device, threads, cpu_graphs,
                                dynamic_int8=not bundle.int8_static)  # issue 13: rows never mix
        tables = SimilarityTables.load(bundle.file(SIMILARITY_DIR))
        cand_dir = bundle.file(CANDIDATES_DIR)
        candidates = CandidateTable.load(cand_dir) if cand_dir.is_dir() else CandidateTable.empty()
        lm_path = Path(lm) if lm is not None else bundle.file(LM_DIR)
        char_lm = _load_lm(lm_path) if lm is not None or lm_path.is_dir() else None
        ranker = HEURISTIC
        if bundle.file(RANKER).is_file():
            try:
                ranker = RankerWeights.from_dict(json.loads(bundle.file(RANKER).read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise CorrectorError(f"bad model bundle: {bundle.file(RANKER)}: {e}") from None
        if "shortlist" not in settings and "shortlist" not in bundle.corrector_defaults and "shortlist" in ranker.meta:
            config = config.with_overrides(shortlist=int(ranker.meta["shortlist"]))  # what the ranker was chosen with
        evidence = Evidence(read_vocab_list(bundle.vocab_path), candidates, tables, char_lm)
        return cls(bundle, networks, tables, config, evidence, ranker)

    def with_lm(self, lm: str | Path | None) -> Corrector:
        """This Corrector over another character LM (a path as for ``load``; None: without one), sharing
        the ONNX sessions and every other table: the folds of cross-fitting differ only in their LM."""
        char_lm = _load_lm(Path(lm)) if lm is not None else None
        return Corrector(self.bundle, self.networks, self.tables, self.config, self.evidence.with_lm(char_lm),
                         self.ranker)

    def with_candidates(self, candidates: str | Path) -> Corrector:
        """This Corrector over another candidate table (a ``training.candidates`` folder: the counts of another
        set of real pairs), sharing the ONNX sessions, the LM and every other table: the folds of cross-fitting."""
        evidence = Evidence(self.evidence.vocab, CandidateTable.load(candidates), self.tables, self.evidence.lm)
        return Corrector(self.bundle, self.networks, self.tables, self.config, evidence, self.ranker)

    @property
    def name(self) -> str:
        return self.bundle.name

    @property
    def version(self) -> str:
        return self.bundle.version

    @property
    def has_lm(self) -> bool:
        return self.evidence.lm is not None

    # ---- public API -------------------------------------------------------------------------------

    def correct(self, text: str, **settings: Any) -> Correction:
        return self.correct_batch([text], **settings)[0]

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        """Correct every text. Output strings have the input's length; only edited characters change.

        ``settings`` override the decoding settings for this call (any CorrectorConfig field)."""
        cfg = self._settings(texts, settings)
        chunks = self._chunks(texts, cfg)
        batches = self._batches(chunks, cfg)
        for batch, sites in zip(batches, self._sites_ahead(batches)):
            self._apply(self._decide(batch, cfg, sites), cfg)
        return self._assemble(texts, chunks)

    def explain(self, text: str, top_k: int = 5, **settings: Any) -> Explanation:
        """Per character: RTD probability, every feature and the probability of each choice, and why
        the best candidate was or was not applied; plus the correction."""
        cfg = self._settings([text], settings)
        chunks = self._chunks([text], cfg)
        rows_of: dict[int, CharExplanation] = {}
        threshold = self._threshold(cfg)
        for batch in self._batches(chunks, cfg):
            scored = self._decide(batch, cfg)
            self._apply(scored, cfg)
            rows_of.update(self._explain_sites(scored, cfg, threshold, top_k))
        out = []
        for i, c in enumerate(text):
            if i in rows_of:
                out.append(rows_of[i])
            else:
                ch = next((k for k in chunks if k.start <= i < k.start + len(k.text)), None)
                why = "protected" if ch is not None and (i - ch.start) in ch.protected else "not editable"
                out.append(CharExplanation(i, c, False, 0.0, [], why))
        return Explanation(self._assemble([text], chunks)[0], out)

    # ---- pipeline steps ---------------------------------------------------------------------------

    def _settings(self, texts: Sequence[str], settings: dict[str, Any]) -> CorrectorConfig:
        if isinstance(texts, str):
            raise CorrectorError("texts must be a list of strings, not one string")
        for t in texts:
            if not isinstance(t, str):
                raise CorrectorError(f"texts must be strings, got {type(t).__name__}")
        try:
            cfg = self.config.with_overrides(**settings)
        except (TypeError, ValueError) as e:
            raise CorrectorError(str(e)) from None
        if settings.get("protect") is not None:  # a call's words add to the configured ones
            cfg = replace(cfg, protect=(*self.config.protect, *cfg.protect))
        return cfg

    def _threshold(self, cfg: CorrectorConfig) -> float:
        if cfg.threshold is not None:
            return cfg.threshold
        return self.ranker.threshold if cfg.use_lm and self.has_lm else self.ranker.threshold_no_lm

    def _chunks(self, texts: Sequence[str], cfg: CorrectorConfig) -> list[_Chunk]:
        max_chars = self.max_tokens - 2
        words = tuple(w for w in cfg.protect if w)
        kept = self._kept_words(cfg.protect_kept_words)
        names = self._name_chars(cfg.protect_foreign_names)
        pieces: list[tuple[int, int, ScriptView, set[int]]] = []
        for i, text in enumerate(texts):
            clean = _scrub_surrogates(text)
            protected = _protected_positions(clean, words, cfg.protect_dictionary_words, kept, names)
            # issue 13: one chunk per sentence (same context alone or in a long text), in simplified script
            for s, e in sentence_chunk_spans(clean, max_chars):
                view = simplified_view(clean[s:e])
                local = {p - s for p in protected if s <= p < e}
                if view.traditional:
                    local |= _protected_positions(view.text, words, False, kept, names)
                pieces.append((i, s, view, local))
        encs = encode_batch(self.tokenizer, [p[2].text for p in pieces], self.max_tokens)
        return [_Chunk(i, s, v.text, enc, prot, view=v if v.traditional else None)
                for (i, s, v, prot), enc in zip(pieces, encs)]

    def _kept_words(self, min_kept: int) -> frozenset[str]:
        """The words ``protect_kept_words`` guards: kept as written at least ``min_kept`` times in the real
        training pairs and never corrected (empty when 0 or when the bundle has no word counts)."""
        if min_kept <= 0:
            return frozenset()
        if min_kept not in self._kept_cache:
            self._kept_cache[min_kept] = frozenset(w for w, (k, c) in self.evidence.table.words.items()
                                                   if k >= min_kept and c == 0)
        return self._kept_cache[min_kept]

    def _name_chars(self, min_share: float) -> frozenset[str]:
        """The characters ``protect_foreign_names`` counts as a foreign name's (empty when 0 or when the bundle
        has no name counts)."""
        if min_share <= 0:
            return frozenset()
        if min_share not in self._names_cache:
            self._names_cache[min_share] = name_chars(self.evidence.table.name_shares, min_share)
        return self._names_cache[min_share]

    def _batches(self, chunks: list[_Chunk], cfg: CorrectorConfig) -> list[list[_Chunk]]:
        todo = [c for c in chunks if any(p >= 0 and p not in c.protected for p in c.enc.char_pos)]
        # networks that run one unpadded row per call pay nothing for padding: no need to cut batches by length
        max_padding = math.inf if self.networks.rows_alone else 0.25
        lengths = [len(c.enc.ids) for c in todo]
        return [[todo[i] for i in idx] for idx in _length_batches(lengths, cfg.batch_size, max_padding)]

    def _sites_ahead(self, batches: list[list[_Chunk]]) -> Iterator[Sites]:
        """The networks' sites of each batch in turn, those of the next batch computed on another thread
        meanwhile: ONNX Runtime releases the GIL, so the networks keep the cores busy while this thread
        gathers, scores and decides the batch before (one core's work). Each batch's sites are what
        ``_sites`` gives for it alone, so the results are the same."""
        if len(batches) < 2:
            yield from (self._sites(b) for b in batches)
            return
        pool = self._ahead.get()
        pending = pool.submit(self._sites, batches[0])
        for k in range(len(batches)):
            sites = pending.result()
            if k + 1 < len(batches):
                pending = pool.submit(self._sites, batches[k + 1])
            yield sites

    def _sites(self, batch: list[_Chunk]) -> Sites:
        """Run both networks on a batch of chunks; one site per editable, unprotected character."""
        seqs = [c.enc.ids for c in batch]
        ids, attn = _pad(seqs)
        tokens = [[t for t, p in enumerate(c.enc.char_pos) if p >= 0 and p not in c.protected] for c in batch]
        width = max(len(t) for t in tokens)
        pos = np.zeros((len(batch), width), dtype=np.int64)
        for r, t in enumerate(tokens):
            pos[r, : len(t)] = t
        rtd, lp = self.networks.run(ids, attn, pos)  # lp: (sites, V), rows in (chunk, position) order
        chunk_i = np.concatenate([np.full(len(t), r, np.int64) for r, t in enumerate(tokens)])
        tok = np.concatenate([np.asarray(t, np.int64) for t in tokens])
        char = np.array([batch[r].enc.char_pos[t] for r, t in zip(chunk_i, tok)], dtype=np.int64)
        src = [batch[r].text[p] for r, p in zip(chunk_i, char)]
        src_id = np.array([batch[r].enc.ids[t] for r, t in zip(chunk_i, tok)], dtype=np.int64)
        return Sites(chunk_i, char, src, src_id, rtd[chunk_i, tok].astype(np.float32), lp)

    def _gather_score(self, batch: list[_Chunk], cfg: CorrectorConfig, word_pairs: bool | None = None,
                      sites: Sites | None = None) -> tuple[Sites, Rows, list | None]:
        """Sites (``sites``: already computed for this batch), rows and LM ids of a batch. Word-pair candidates
        are gathered with the LM (their evidence is the LM's) when the scorer weighs the ``pair`` feature
        (``word_pairs`` True/False: regardless)."""
        sites = self._sites(batch) if sites is None else sites
        custom: dict[str, set[str]] = {}
        for a, b in cfg.confusions:
            custom.setdefault(a, set()).add(b)
        use_lm = cfg.use_lm and self.has_lm
        want = self.ranker.scorer.weighs("pair") if word_pairs is None else word_pairs
        pairs = self.evidence.word_pairs(sites) if use_lm and want else None
        short = self.evidence.shortlist(sites, self.ranker.shortlist, cfg.shortlist, cfg.top_k, custom, pairs)
        texts = [c.text for c in batch]
        lm_ids = self.evidence.lm_ids(texts) if use_lm else None
        return sites, self.evidence.rows(sites, texts, short, lm_ids, pairs), lm_ids

    def _decide(self, batch: list[_Chunk], cfg: CorrectorConfig, sites: Sites | None = None) -> _Scored:
        return self._decide_rows(batch, *self._gather_score(batch, cfg, sites=sites), cfg)

    def _decide_rows(self, batch: list[_Chunk], sites: Sites, rows: Rows, lm_ids: list | None,
                     cfg: CorrectorConfig) -> _Scored:
        """Iterative decisions on gathered and scored rows (``rows.X`` and ``lm_ids`` are updated in place)."""
        n = len(sites)
        scorer = self.ranker.pick(lm_ids is not None)
        threshold = scorer.uncalibrate(self._threshold(cfg))  # the threshold is on the calibrated confidence
        open_sites = np.ones(n, dtype=bool)
        decided: dict[int, tuple[int, float]] = {}
        first = choice_probs(rows, scorer, n)
        probs = first
        spacing = self.evidence.lm.order if lm_ids is not None else 1
        sentence = _sentence_of(batch, sites) if cfg.max_edits else None
        per_sentence: dict[tuple[int, int], int] = defaultdict(int)
        capped: set[int] = set()
        regional: set[int] = set()
        vetoed: dict[int, str] = {}
        veto = scorer.veto if cfg.veto_unreliable_pairs else {}
        for _ in range(MAX_ROUNDS):
            best_row, best_p = best_candidates(rows, probs, n, open_sites)
            picked = pick_round(sites.chunk, sites.char, best_row, best_p, threshold, spacing)
            if cfg.protect_regional_forms:  # the site stays as written: its best edit is not a spelling fix
                other_region = {s for s in picked if self._regional_edit(batch, sites, rows, decided, s,
                                                                        int(best_row[s]))}
                regional |= other_region
                open_sites[list(other_region)] = False
                picked = [s for s in picked if s not in other_region]
            if veto:  # the site stays as written: this edit was mostly wrong on the real training pairs
                for s in picked:
                    pair = sites.src[s] + self.vocab[int(rows.vid[best_row[s]])]
                    if pair in veto:
                        vetoed[s] = pair
                        open_sites[s] = False
                picked = [s for s in picked if s not in vetoed]
            if sentence is not None:  # max_edits: the most confident first; the others stay as written,
                keep = []  # and the text the LM re-scores never has them
                for s in picked:
                    key = (int(sites.chunk[s]), int(sentence[s]))
                    if per_sentence[key] < cfg.max_edits:
                        per_sentence[key] += 1
                        keep.append(s)
                    else:
                        capped.add(s)
                        open_sites[s] = False
                picked = keep
            if not picked:
                if (capped or regional or vetoed) and open_sites.any() and best_p[open_sites].max() > threshold:
                    continue  # only capped, regional or vetoed sites this round; others may still be picked
                break
            for s in picked:
                decided[s] = (int(best_row[s]), float(best_p[s]))
                open_sites[s] = False
            if lm_ids is None:
                continue
            for s in picked:  # the text the LM sees now has the edit
                lm_ids[sites.chunk[s]] = lm_ids[sites.chunk[s]].copy()
                lm_ids[sites.chunk[s]][sites.char[s]] = self.evidence.lm_vid[rows.vid[best_row[s]]]
            near = np.zeros(n, dtype=bool)
            for s in picked:
                near |= (sites.chunk == sites.chunk[s]) & (np.abs(sites.char - sites.char[s]) < spacing)
            near &= open_sites
            if not near.any():
                break
            which = near[rows.site]
            rows.X[which, COL["lm_gain"]] = self.evidence.lm_gain(sites, rows, lm_ids, which)[which]
            rows.X[:, COL["pair"]] = self.evidence.pair_gain(sites, rows, lm_ids)  # what is left to gain
            probs = choice_probs(rows, scorer, n)
        return _Scored(batch, sites, rows, probs, first, decided, capped, regional, vetoed, scorer)

    def _regional_edit(self, batch: list[_Chunk], sites: Sites, rows: Rows, decided: dict[int, tuple[int, float]],
                       s: int, row: int) -> bool:
        """Whether writing row's character at site ``s`` only changes the regional form of its word, judged on
        the two characters either side in the chunk as corrected so far."""
        k = int(sites.chunk[s])
        text = list(batch[k].text)
        for t, (r, _) in decided.items():
            if int(sites.chunk[t]) == k:
                text[int(sites.char[t])] = self.vocab[int(rows.vid[r])]
        i = int(sites.char[s])
        lo, hi = max(0, i - REGIONAL_WINDOW), i + REGIONAL_WINDOW + 1
        before = "".join(text[lo:hi])
        text[i] = self.vocab[int(rows.vid[row])]
        return regional_form(before, "".join(text[lo:hi]))

    def _apply(self, scored: _Scored, cfg: CorrectorConfig) -> None:
        sites, rows = scored.sites, scored.rows
        per_chunk: dict[int, list[Edit]] = defaultdict(list)
        for s, (r, p) in scored.decided.items():
            target = self.vocab[int(rows.vid[r])]
            reason = self._reason(sites.src[s], target, rows.X[r])
            confidence = round(float(scored.scorer.calibrate(p)), 4)
            per_chunk[int(sites.chunk[s])].append(Edit(int(sites.char[s]), sites.src[s], target, confidence, reason))
        for k, edits in per_chunk.items():
            ch = scored.chunks[k]
            if cfg.max_edits and len(edits) > cfg.max_edits:
                edits = _most_confident_per_sentence(ch.text, edits, cfg.max_edits)
            ch.edits = sorted(edits, key=lambda e: e.position)
            if ch.view is not None:  # issue 13: back in the original script, never a script conversion
                ch.edits = restore_edits(ch.view, ch.edits)

    def _reason(self, source: str, target: str, x: np.ndarray) -> Reason:
        """From the pair's candidate-table similarities; a pair the table does not hold (a generator or a
        custom candidate, or a bundle without a table) is judged by the bundle's similarity tables."""
        pin, shp = float(x[COL["pinyin"]]), float(x[COL["shape"]])
        if pin == 0.0 and shp == 0.0:
            pin, shp = self.tables.pinyin_sim(source, target), self.tables.shape_sim(source, target)
        return _reason(pin, shp)

    def _explain_sites(self, scored: _Scored, cfg: CorrectorConfig, threshold: float,
                       top_k: int) -> dict[int, CharExplanation]:
        sites, rows = scored.sites, scored.rows
        probs, first = scored.scorer.calibrate(scored.probs), scored.scorer.calibrate(scored.first)
        starts = list(np.searchsorted(rows.site, np.arange(len(sites)), side="left")) + [len(rows)]
        out = {}
        for s in range(len(sites)):
            ch = scored.chunks[int(sites.chunk[s])]
            lo, hi = starts[s], starts[s + 1]
            order = sorted(range(lo + 1, hi), key=lambda r: -probs[r])[:top_k]
            cands = [Candidate(self.vocab[int(rows.vid[r])], round(float(probs[r]), 4),
                               round(math.exp(float(rows.X[r, COL["gen_lp"]])), 4),
                               round(float(rows.X[r, COL["pinyin"]]), 3), round(float(rows.X[r, COL["shape"]]), 3),
                               {f: round(float(rows.X[r, i]), 3) for i, f in enumerate(FEATURES)})
                     for r in order]
            keep_p = float(scored.probs[lo])  # the softmax share of the character as written
            applied = any(e.position == int(sites.char[s]) for e in ch.edits)
            if applied:
                why = f"applied: {self.vocab[int(rows.vid[scored.decided[s][0]])]}"
            elif s in scored.decided or s in scored.capped:
                why = "kept: max_edits reached (more confident edits in this sentence)"
            elif s in scored.vetoed:
                pair = scored.vetoed[s]
                right, wrong = scored.scorer.veto[pair]
                why = (f"kept: {pair[0]}→{pair[1]} was right in {right} of its {right + wrong} edits on the real "
                       "training pairs (veto_unreliable_pairs)")
            elif s in scored.regional:
                why = (f"kept: {cands[0].char if cands else 'the best candidate'} would only write the word another "
                       "region's way (protect_regional_forms)")
            elif not cands:
                why = "no candidates"
            elif cands[0].score <= threshold:
                why = f"kept: best candidate {cands[0].char} at {cands[0].score:.3f} is not above the threshold {threshold:g}"
                if float(first[lo + 1 : hi].max()) > threshold:
                    why += " (re-scored after an edit next to it)"
            else:
                why = f"kept: above the threshold, but the {MAX_ROUNDS} rounds of edits ran out"
            pos = ch.start + int(sites.char[s])
            out[pos] = CharExplanation(pos, sites.src[s], True, round(float(sites.rtd[s]), 4), cands, why,
                                       round(keep_p, 4))
        return out

    def _assemble(self, texts: Sequence[str], chunks: list[_Chunk]) -> list[Correction]:
        per_text: dict[int, list[Edit]] = defaultdict(list)
        for ch in chunks:
            for e in ch.edits:
                per_text[ch.text_index].append(
                    Edit(ch.start + e.position, e.source, e.target, e.confidence, e.reason))
        out = []
        for i, text in enumerate(texts):
            edits = sorted(per_text.get(i, []), key=lambda e: e.position)
            chars = list(text)
            for e in edits:
                chars[e.position] = e.target
            out.append(Correction(text, "".join(chars), edits))
        return out


def _load_lm(path: Path) -> Any:
    """A character LM directory (training.char_lm), or a KenLM .arpa/.klm file through the kenlm module."""
    if path.is_file() and path.suffix in (".arpa", ".klm", ".bin"):
        from .char_lm_kenlm import KenLMCharLM

        return KenLMCharLM.load(path)
    if not path.is_dir():
        raise CorrectorError(f"no character LM at {path}: expected a directory from training.char_lm "
                             "or a KenLM .arpa/.klm file")
    return CharLM.load(path)


def _reason(pin: float, shp: float) -> Reason:
    """Why the replacement is plausible: similar sound, similar shape, or neither."""
    if pin >= 0.5 and pin >= shp:
        return "pinyin"
    return "shape" if shp >= 0.4 else ("pinyin" if pin >= 0.5 else "other")


def _length_batches(lengths: list[int], batch_size: int, max_padding: float = 0.25) -> list[list[int]]:
    """Indices in length order, cut into batches of at most ``batch_size`` whose padding stays under
    ``max_padding`` of the real tokens: one long chunk no longer pads thirty short ones to its length."""
    batches: list[list[int]] = []
    cur: list[int] = []
    tokens = 0
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        n = lengths[i]  # the longest so far: every row of the batch is padded to it
        if cur and (len(cur) >= batch_size or n * (len(cur) + 1) > (1 + max_padding) * (tokens + n)):
            batches.append(cur)
            cur, tokens = [], 0
        cur.append(i)
        tokens += n
    if cur:
        batches.append(cur)
    return batches


def _pad(seqs: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(s) for s in seqs)
    ids = np.zeros((len(seqs), width), dtype=np.int64)
    attn = np.zeros((len(seqs), width), dtype=np.int64)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = s
        attn[r, : len(s)] = 1
    return ids, attn


def _sentence_of(batch: list[_Chunk], sites: Sites) -> np.ndarray:
    """Index of each site's sentence within its chunk."""
    ends = [list(accumulate(len(s) for s in split_sentences(ch.text))) for ch in batch]
    return np.array([bisect_right(ends[c], i) for c, i in zip(sites.chunk.tolist(), sites.char.tolist())],
                    dtype=np.int64)


def _most_confident_per_sentence(text: str, edits: list[Edit], limit: int) -> list[Edit]:
    """The ``limit`` most confident edits of each sentence of a chunk (a chunk may hold several)."""
    ends = list(accumulate(len(s) for s in split_sentences(text)))
    per_sentence: dict[int, list[Edit]] = defaultdict(list)
    for e in edits:
        per_sentence[bisect_right(ends, e.position)].append(e)
    return [e for group in per_sentence.values() for e in sorted(group, key=lambda e: -e.confidence)[:limit]]


def _scrub_surrogates(text: str) -> str:
    """Lone surrogates cannot be encoded; stand in U+FFFD (same length, never edited)."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def _protected_positions(text: str, words: tuple[str, ...], dictionary_words: bool,
                         kept: frozenset[str] = frozenset(), names: frozenset[str] = frozenset()) -> set[int]:
    out: set[int] = foreign_name_positions(text, names) if names else set()
    for w in words:
        start = text.find(w)
        while start >= 0:
            out.update(range(start, start + len(w)))
            start = text.find(w, start + 1)
    if kept:
        for n in (2, 3):
            out.update(p for i in range(len(text) - n + 1) if text[i:i + n] in kept for p in range(i, i + n))
    if dictionary_words and text:
        import jieba

        jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict" chatter on stderr
        pos = 0
        for w in jieba.lcut(text, HMM=False):
            if len(w) > 1:
                out.update(range(pos, pos + len(w)))
            pos += len(w)
    return out
