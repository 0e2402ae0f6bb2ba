"""``Corrector``: detect with the discriminator, propose with the generator, rank, emit edits."""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

import numpy as np

from .bundle import SIMILARITY_DIR, Bundle, Precision
from .config import CorrectorConfig
from .model_path import ENV_MODEL, default_model_path
from .rank import Ranker
from .runtime import Device, OnnxNetworks
from .similarity import SimilarityTables
from .text import chunk_spans, split_sentences
from .tokenize import MASK, SPECIAL_IDS, Encoded, build_tokenizer, encode_batch, read_vocab_list
from .types import CharExplanation, Correction, CorrectorError, Edit, Explanation


@dataclass
class _Chunk:
    text_index: int
    start: int  # offset of the chunk in its text
    text: str
    enc: Encoded
    protected: set[int] = field(default_factory=set)  # chunk-relative character positions
    probs: np.ndarray | None = None
    suspects: list[int] = field(default_factory=list)  # token indices
    edits: list[Edit] = field(default_factory=list)  # chunk-relative positions


class Corrector:
    """Chinese spelling correction over one model bundle. Thread-safe after ``load``."""

    def __init__(self, bundle: Bundle, networks: OnnxNetworks, tables: SimilarityTables,
                 config: CorrectorConfig):
        self.bundle = bundle
        self.networks = networks
        self.tables = tables
        self.config = config
        self.tokenizer = build_tokenizer(bundle.vocab_path)
        self.vocab = read_vocab_list(bundle.vocab_path)
        self.ranker = Ranker(self.vocab, tables)
        self.max_tokens = bundle.max_seq_len

    @classmethod
    def load(cls, path: str | Path | None = None, *, device: Device = "auto", threads: int = 0,
             precision: Precision = "auto", **settings) -> Corrector:
        """Open a bundle (default: :func:`default_model_path`); ``settings`` override CorrectorConfig.

        ``precision`` picks the CPU graphs: "fp32", "int8" (the bundle's quantised copies) or "auto"
        (what the bundle's manifest recommends). CUDA always runs the float graphs.
        """
        root = Path(path) if path is not None else default_model_path()
        if path is None and not root.exists():
            raise CorrectorError(
                f"no model bundle found at {root}; pass a bundle directory (--model DIR) or set ${ENV_MODEL}"
            )
        bundle = Bundle.load(root)
        try:
            config = CorrectorConfig.from_dict({**bundle.corrector_defaults, **settings})
        except (TypeError, ValueError) as e:
            raise CorrectorError(str(e)) from None
        (disc, gen), cpu_files = bundle.onnx_files(precision)
        networks = OnnxNetworks(disc, gen, device, threads, cpu_files)
        tables = SimilarityTables.load(bundle.file(SIMILARITY_DIR))
        return cls(bundle, networks, tables, config)

    @property
    def name(self) -> str:
        return self.bundle.name

    @property
    def version(self) -> str:
        return self.bundle.version

    # ---- public API -------------------------------------------------------------------------------

    def correct(self, text: str, **options) -> Correction:
        return self.correct_batch([text], **options)[0]

    def correct_batch(self, texts: Sequence[str], *, threshold: float | None = None,
                      max_edits: int | None = None, protect: Iterable[str] | None = None) -> list[Correction]:
        """Correct every text. Output strings have the input's length; only edited characters change."""
        for t in texts:
            if not isinstance(t, str):
                raise CorrectorError(f"texts must be strings, got {type(t).__name__}")
        try:
            cfg = self.config.with_overrides(threshold=threshold, max_edits=max_edits)
        except ValueError as e:
            raise CorrectorError(str(e)) from None
        chunks = self._chunks(texts, cfg, tuple(protect or ()))
        self._detect(chunks, cfg)
        self._propose(chunks, cfg)
        if cfg.verify:
            self._verify(chunks, cfg)
        return self._assemble(texts, chunks)

    def explain(self, text: str, top_k: int = 5) -> Explanation:
        """Per character: RTD probability and the best-ranked candidates (unfiltered), plus the correction."""
        cfg = self.config
        chunks = self._chunks([text], cfg, ())
        self._detect(chunks, cfg)
        rows: dict[int, CharExplanation] = {}
        for ch in chunks:
            assert ch.probs is not None
            editable = [t for t, p in enumerate(ch.enc.char_pos) if p >= 0]
            lps: np.ndarray | list[np.ndarray] = self._generator_logprobs([ch], [editable], cfg, batch_size=1)[0] if editable else []
            for t, lp in zip(editable, lps):
                pos = ch.enc.char_pos[t]
                src = ch.text[pos]
                cands = self.ranker.candidates(src, lp, cfg, self._custom(src, cfg), filtered=False)[:top_k]
                rows[ch.start + pos] = CharExplanation(ch.start + pos, src, True, round(float(ch.probs[t]), 4), cands)
        chars = [rows.get(i) or CharExplanation(i, c, False, 0.0, []) for i, c in enumerate(text)]
        # finish the same pipeline on these chunks rather than tokenising and detecting again via correct()
        self._propose(chunks, cfg)
        if cfg.verify:
            self._verify(chunks, cfg)
        return Explanation(self._assemble([text], chunks)[0], chars)

    # ---- pipeline steps ---------------------------------------------------------------------------

    def _chunks(self, texts: Sequence[str], cfg: CorrectorConfig, extra_protect: tuple[str, ...]) -> list[_Chunk]:
        max_chars = self.max_tokens - 2
        words = tuple(w for w in (*cfg.protect, *extra_protect) if w)
        pieces: list[tuple[int, int, str, set[int]]] = []
        for i, text in enumerate(texts):
            clean = _scrub_surrogates(text)
            protected = _protected_positions(clean, words, cfg.protect_dictionary_words)
            for s, e in chunk_spans(clean, max_chars):
                local = {p - s for p in protected if s <= p < e}
                pieces.append((i, s, clean[s:e], local))
        encs = encode_batch(self.tokenizer, [p[2] for p in pieces], self.max_tokens)
        return [_Chunk(i, s, t, enc, prot) for (i, s, t, prot), enc in zip(pieces, encs)]

    def _detect(self, chunks: list[_Chunk], cfg: CorrectorConfig) -> None:
        todo = [c for c in chunks if any(p >= 0 for p in c.enc.char_pos)]
        probs = self._discriminate([c.enc.ids for c in todo], cfg.batch_size)
        for ch, p in zip(todo, probs):
            ch.probs = p
            ch.suspects = [
                t for t, pos in enumerate(ch.enc.char_pos)
                if pos >= 0 and pos not in ch.protected and p[t] > cfg.threshold
            ]

    def _propose(self, chunks: list[_Chunk], cfg: CorrectorConfig) -> None:
        todo = [c for c in chunks if c.suspects]
        for idx in _length_batches([len(c.enc.ids) for c in todo], cfg.batch_size):
            batch = [todo[i] for i in idx]
            lps = self._generator_logprobs(batch, [c.suspects for c in batch], cfg, cfg.batch_size)
            for ch, rows in zip(batch, lps):
                assert ch.probs is not None
                for t, lp in zip(ch.suspects, rows):
                    pos = ch.enc.char_pos[t]
                    src = ch.text[pos]
                    edit = self.ranker.decide(pos, src, float(ch.probs[t]), lp, cfg, self._custom(src, cfg))
                    if edit is not None:
                        ch.edits.append(edit)
                if cfg.max_edits and len(ch.edits) > cfg.max_edits:
                    ch.edits = _most_confident_per_sentence(ch.text, ch.edits, cfg.max_edits)

    def _verify(self, chunks: list[_Chunk], cfg: CorrectorConfig) -> None:
        """Run the discriminator on the corrected chunk; drop edits it still flags."""
        todo = [c for c in chunks if c.edits]
        fixed_ids = [self._apply_ids(c) for c in todo]
        probs = self._discriminate(fixed_ids, cfg.batch_size)
        for ch, p in zip(todo, probs):
            tok_of = {pos: t for t, pos in enumerate(ch.enc.char_pos) if pos >= 0}
            ch.edits = [e for e in ch.edits if p[tok_of[e.position]] <= cfg.verify_threshold]

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

    # ---- model calls ------------------------------------------------------------------------------

    def _discriminate(self, seqs: list[list[int]], batch_size: int) -> list[np.ndarray]:
        """RTD probabilities per sequence, batched by length so little padding is computed."""
        out: list[np.ndarray | None] = [None] * len(seqs)
        for idx in _length_batches([len(s) for s in seqs], batch_size):
            ids, attn = _pad([seqs[i] for i in idx])
            probs = self.networks.discriminate(ids, attn)
            for row, i in enumerate(idx):
                out[i] = probs[row, : len(seqs[i])]
        return out  # type: ignore[return-value]

    def _generator_logprobs(self, chunks: list[_Chunk], positions: list[list[int]], cfg: CorrectorConfig,
                            batch_size: int) -> list[np.ndarray]:
        """Per chunk, an array (len(positions), V) of log-probabilities at its positions."""
        out: list[np.ndarray] = []
        mask_id = SPECIAL_IDS[MASK]
        for s in range(0, len(chunks), batch_size):
            part = chunks[s : s + batch_size]
            seqs = []
            for ch, pos in zip(part, positions[s : s + batch_size]):
                ids = list(ch.enc.ids)
                if cfg.mask_suspects:
                    assert ch.probs is not None
                    for t in pos:
                        if ch.probs[t] > cfg.mask_threshold:
                            ids[t] = mask_id
                seqs.append(ids)
            ids_arr, attn = _pad(seqs)
            width = max(len(p) for p in positions[s : s + batch_size])
            pos_arr = np.zeros((len(part), width), dtype=np.int64)
            for r, p in enumerate(positions[s : s + batch_size]):
                pos_arr[r, : len(p)] = p
            lp = self.networks.generate(ids_arr, attn, pos_arr)
            out.extend([lp[r, : len(p)] for r, p in enumerate(positions[s : s + batch_size])])
        return out

    def _apply_ids(self, ch: _Chunk) -> list[int]:
        ids = list(ch.enc.ids)
        tok_of = {pos: t for t, pos in enumerate(ch.enc.char_pos) if pos >= 0}
        for e in ch.edits:
            ids[tok_of[e.position]] = self.ranker.char_id[e.target]
        return ids

    def _custom(self, source: str, cfg: CorrectorConfig) -> set[str]:
        return {b for a, b in cfg.confusions if a == source}


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


def _protected_positions(text: str, words: tuple[str, ...], dictionary_words: bool) -> set[int]:
    out: set[int] = set()
    for w in words:
        start = text.find(w)
        while start >= 0:
            out.update(range(start, start + len(w)))
            start = text.find(w, start + 1)
    if dictionary_words and text:
        import jieba

        jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict" chatter on stderr
        pos = 0
        for w in jieba.lcut(text, HMM=False):
            if len(w) > 1:
                out.update(range(pos, pos + len(w)))
            pos += len(w)
    return out
