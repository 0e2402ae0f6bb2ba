"""``Corrector``: the decoder's public stages over one model bundle.

prepare (chunks, protected characters, batches) -> score (the networks, then every feature of every choice, batched)
-> decide (the ranker's rounds: one status per site, ``corrector.decide``) -> assemble (the corrections).
``correct_batch`` runs them in turn; ``explain`` reads the same decisions; training calls the same stages.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from corrector.bundle import Bundle, Precision
from corrector.bundle_tables import BundleTables, candidate_folder, load_lm
from corrector.config import CorrectorConfig, in_force
from corrector.decide import decide
from corrector.evidence.candidates import CandidateTable
from corrector.evidence.char_lm import CharLM
from corrector.evidence.dictionary import WordTable
from corrector.evidence.kept_forms import PairCounts
from corrector.evidence.particles import ParticleTable
from corrector.evidence.similarity import SimilarityTables
from corrector.explain import explain_text
from corrector.features import Evidence, Sites
from corrector.guards import Protections
from corrector.model_path import ENV_MODEL, default_model_path
from corrector.rank import HEURISTIC, RankerWeights
from corrector.runtime.sessions import Device, Networks, OnnxNetworks, ProcessLocalPool
from corrector.stages import Chunk, Decided, Prepared, Scored, assemble, edits_by_chunk
from corrector.text.chars import sentence_chunk_spans
from corrector.text.script import ScriptView, normalise, prepare_converters
from corrector.text.tokenize import build_tokenizer, encode_batch, read_vocab_list
from corrector.types import Correction, CorrectorError, Edit, Explanation

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from corrector.evidence.char_lm_kenlm import KenLMCharLM

N = TypeVar("N", bound=Networks)


class Corrector:
    """Chinese spelling correction over one model bundle. Thread-safe after ``load``.

    A value: nothing is assigned into a Corrector after it is made. Another LM, candidate table, ranker or
    settings make a new one from it (``with_lm``, ``with_candidates``, ``with_ranker``, ``with_settings``,
    ``with_networks``, ``with_domain_words``), sharing the ONNX sessions and every table not replaced."""

    def __init__(self, bundle: Bundle, networks: Networks, tables: SimilarityTables,
                 config: CorrectorConfig, evidence: Evidence, ranker: RankerWeights,
                 name_shares: dict[str, float] | None = None, domain_words: tuple[str, ...] = (),
                 load_settings: Mapping[str, Any] | None = None):
        set_ = object.__setattr__
        set_(self, "bundle", bundle)
        set_(self, "networks", networks)
        set_(self, "tables", tables)
        set_(self, "config", config)
        set_(self, "evidence", evidence)
        set_(self, "ranker", ranker)
        # the load's settings, which with_ranker resolves again with another ranker's shortlist (default: the
        # config as given is the load's)
        set_(self, "load_settings", MappingProxyType(dict(config.to_dict() if load_settings is None
                                                          else load_settings)))
        set_(self, "tokenizer", build_tokenizer(bundle.vocab_path))
        set_(self, "vocab", evidence.vocab)
        set_(self, "max_tokens", bundle.max_seq_len)
        set_(self, "protections", Protections(name_shares or {}, domain_words))  # the guards' protect hooks
        set_(self, "_ahead", ProcessLocalPool(1, "sites-ahead"))  # see score

    bundle: Bundle
    networks: Networks
    tables: SimilarityTables
    config: CorrectorConfig
    evidence: Evidence
    ranker: RankerWeights
    load_settings: Mapping[str, Any]
    tokenizer: Tokenizer
    vocab: list[str]
    max_tokens: int
    protections: Protections
    _ahead: ProcessLocalPool

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Corrector is a value: {name} is not assigned into it; derive a new one "
                             f"(with_ranker, with_settings, with_lm, with_candidates, with_networks, ...)")

    @classmethod
    def load(cls, path: str | Path | None = None, *, device: Device = "auto", threads: int = 0,
             precision: Precision = "auto", lm: str | Path | None = None, **settings: Any) -> Corrector:
        """Open a bundle (default: :func:`default_model_path`); ``settings`` override CorrectorConfig.

        ``precision`` picks the CPU graphs: "fp32", "int8" (the bundle's quantised copies) or "auto"
        (what the bundle's manifest recommends). CUDA always runs the float graphs. ``lm`` replaces the
        bundle's character LM (a directory from ``training.evidence.char_lm``, or a KenLM ``.arpa``/``.klm`` file
        when the ``kenlm`` module is installed).
        """
        root = Path(path) if path is not None else default_model_path()
        if path is None and not root.exists():
            raise CorrectorError(
                f"no model bundle found at {root}; pass a bundle directory (--model DIR) or set ${ENV_MODEL}"
            )
        bundle = Bundle.load(root)
        ranker = RankerWeights.of_bundle(bundle)
        try:  # a bad setting fails before anything heavy loads
            config = in_force(bundle.corrector_defaults, ranker.meta.get("shortlist"), load=settings)
        except (TypeError, ValueError) as e:
            raise CorrectorError(str(e)) from None
        prepare_converters()  # OpenCC's dictionaries load on another thread meanwhile
        graphs, cpu_graphs = bundle.onnx_files(precision)
        with ThreadPoolExecutor(1, thread_name_prefix="onnx-load") as pool:  # the sessions build in C++, without
            sessions = pool.submit(OnnxNetworks, graphs, device, threads, cpu_graphs,  # the GIL, as the tables load
                                   dynamic_int8=not bundle.int8_static)  # rows never mix
            t = BundleTables.load(bundle, lm)
            return cls.from_parts(bundle, sessions, t.similarity, config, candidates=t.candidates, counts=t.counts,
                                  name_shares=t.name_shares, lm=t.lm, ranker=ranker, load_settings=settings,
                                  domain_words=t.domain_words, words=t.words, particles=t.particles)

    @classmethod
    def from_parts(cls, bundle: Bundle, networks: N | Future[N], tables: SimilarityTables,
                   config: CorrectorConfig | None = None, *, candidates: CandidateTable | None = None,
                   counts: PairCounts | None = None, name_shares: dict[str, float] | None = None,
                   lm: CharLM | KenLMCharLM | None = None, words: WordTable | None = None,
                   particles: ParticleTable | None = None, ranker: RankerWeights = HEURISTIC,
                   domain_words: Sequence[str] = (),
                   load_settings: Mapping[str, Any] | None = None) -> Corrector:
        """A Corrector put together from its parts, as ``load`` does from a bundle's files: the bundle (its
        vocabulary, window and name), the networks, the similarity tables, the decoding settings (default: the
        defaults of CorrectorConfig), the candidate table, the word forms the real pairs keep and the foreign
        names' characters (default: none of the three), a character LM, jieba's words as the bundle stores them
        (None: read from jieba at first use), the particles' table (default: none), the ranker (default: the
        hand-set one) and the domain's words kept as written (``corrector adapt``; default: none).
        ``load_settings``: the settings ``config`` was resolved with (``load``'s; default: all of ``config``), which
        ``with_ranker`` resolves again.

        ``networks`` may be a Future (``load`` builds the ONNX sessions on another thread): it is waited for
        only once the rest is indexed, so the two overlap."""
        evidence = Evidence(read_vocab_list(bundle.vocab_path),
                            candidates if candidates is not None else CandidateTable.empty(), tables, lm, words,
                            counts, particles)
        if isinstance(networks, Future):
            networks = networks.result()
        return cls(bundle, networks, tables, config if config is not None else CorrectorConfig(), evidence, ranker,
                   name_shares, tuple(domain_words), load_settings if config is not None else load_settings or {})

    def with_lm(self, lm: str | Path | None) -> Corrector:
        """This Corrector over another character LM (a path as for ``load``; None: without one), sharing
        the ONNX sessions and every other table: the folds of cross-fitting differ only in their LM."""
        char_lm = load_lm(Path(lm)) if lm is not None else None
        return self._derived(evidence=self.evidence.with_lm(char_lm))

    def with_candidates(self, candidates: str | Path) -> Corrector:
        """This Corrector over another candidate table (a ``training.evidence.candidates`` folder: the counts of another
        set of real pairs, with their kept word forms and name shares), sharing the ONNX sessions, the LM and every
        other table: the folds of cross-fitting."""
        table, counts, names = candidate_folder(Path(candidates))
        return self._derived(evidence=self.evidence.with_candidates(table, counts), name_shares=names)

    def with_domain_words(self, words: Sequence[str]) -> Corrector:
        """This Corrector keeping another list of domain words as written (``protect_domain_words``), sharing
        everything else."""
        return self._derived(domain_words=tuple(words))

    def with_ranker(self, ranker: RankerWeights) -> Corrector:
        """This Corrector deciding with another ranker, as a bundle holding it would load: its thresholds, and its
        shortlist size where neither the bundle's defaults nor the load's settings name one."""
        config = in_force(self.bundle.corrector_defaults, ranker.meta.get("shortlist"), load=self.load_settings)
        return self._derived(ranker=ranker, config=config)

    def with_evidence(self, evidence: Evidence) -> Corrector:
        """This Corrector scoring with other evidence (``features.Evidence`` over other tables), sharing the
        networks."""
        return self._derived(evidence=evidence)

    def with_networks(self, networks: Networks) -> Corrector:
        """This Corrector running other networks over the same vocabulary (the same graphs on other sessions,
        say), sharing every table."""
        return self._derived(networks=networks)

    def with_settings(self, **settings: Any) -> Corrector:
        """This Corrector with these settings in force from load on (as ``Corrector.load(..., **settings)``
        would add them; ValueError names a bad one), sharing everything else."""
        return self._derived(config=in_force(loaded=self.config, call=settings),
                             load_settings={**self.load_settings, **settings})

    def _derived(self, evidence: Evidence | None = None, name_shares: dict[str, float] | None = None,
                 domain_words: tuple[str, ...] | None = None, ranker: RankerWeights | None = None,
                 config: CorrectorConfig | None = None, load_settings: Mapping[str, Any] | None = None,
                 networks: Networks | None = None) -> Corrector:
        """A new Corrector with these parts in place of this one's, sharing the others (the ONNX sessions first)."""
        return Corrector(self.bundle, self.networks if networks is None else networks, self.tables,
                         self.config if config is None else config,
                         self.evidence if evidence is None else evidence, self.ranker if ranker is None else ranker,
                         self.protections.name_shares if name_shares is None else name_shares,
                         self.protections.domain_words if domain_words is None else domain_words,
                         self.load_settings if load_settings is None else load_settings)

    @property
    def name(self) -> str:
        return self.bundle.name

    @property
    def version(self) -> str:
        return self.bundle.version

    @property
    def has_lm(self) -> bool:
        return self.evidence.lm is not None

    # ---- the stages: prepare -> score -> decide -> assemble ------------------------------------------

    def correct(self, text: str, **settings: Any) -> Correction:
        return self.correct_batch([text], **settings)[0]

    def correct_batch(self, texts: Sequence[str], **settings: Any) -> list[Correction]:
        """Correct every text. Output strings have the input's length; only edited characters change.

        ``settings`` override the decoding settings for this call (any CorrectorConfig field)."""
        prepared = self.prepare(texts, **settings)
        return prepared.assemble(self._correct(prepared.chunks, prepared.batches, prepared.settings))

    def correct_chunks(self, chunks: Sequence[Chunk], settings: CorrectorConfig) -> list[tuple[Edit, ...]]:
        """Score and decide ``chunks``: any chunks that ``prepare`` made with ``settings`` (its
        ``prepared.settings``), from one call or several, in any order. Each chunk's edits, in chunk positions
        (``Prepared.assemble`` puts them back into texts). A chunk's edits never depend on what else is in the
        call: chunks are the corrector's work units."""
        return self._correct(chunks, self._batches(chunks, settings), settings)

    def _correct(self, chunks: Sequence[Chunk], batches: Sequence[Sequence[Chunk]],
                 settings: CorrectorConfig) -> list[tuple[Edit, ...]]:
        return edits_by_chunk(chunks, [self.decide(s, settings) for s in self._score_batches(batches, settings)])

    def explain(self, text: str, shown: int = 5, **settings: Any) -> Explanation:
        """Per character: RTD probability, every feature and the probability of each choice (the ``shown`` most
        probable), and why the best candidate was or was not applied; plus the correction. ``settings`` are the
        decoding settings of a call, ``top_k`` among them."""
        prepared = self.prepare([text], **settings)
        decided = [self.decide(s, prepared.settings) for s in self.score(prepared)]
        return Explanation(assemble(prepared, decided)[0], explain_text(prepared, decided, self.vocab, shown))

    def prepare(self, texts: Sequence[str], **settings: Any) -> Prepared:
        """Chunks (one per sentence, in simplified script), the characters guards protect, and the batches of
        chunks with sites for the networks. ``settings`` override the decoding settings (CorrectorConfig)."""
        cfg = self._settings(texts, settings)
        max_chars = self.max_tokens - 2
        pieces: list[tuple[int, int, ScriptView, dict[int, str], bool]] = []
        for i, text in enumerate(texts):
            clean = _scrub_surrogates(text)
            # one chunk per sentence (same context alone or in a long text), in simplified script
            spans = sentence_chunk_spans(clean, max_chars)
            written = normalise(clean, spans)
            protected = self.protections.positions(written, cfg)  # every guard's protect hook
            for (s, e), view in zip(spans, written.views):
                local = {p - s: g for p, g in protected.items() if s <= p < e}
                pieces.append((i, s, view, local, written.mainland))
        encs = encode_batch(self.tokenizer, [p[2].text for p in pieces], self.max_tokens)
        chunks = tuple(Chunk(i, s, v.text, enc, prot, view=v if v.traditional else None, mainland=mainland)
                       for (i, s, v, prot, mainland), enc in zip(pieces, encs))
        return Prepared(tuple(texts), cfg, chunks, self._batches(chunks, cfg))

    def score(self, prepared: Prepared, word_pairs: bool | None = None) -> Iterator[Scored]:
        """Each batch of ``prepared`` scored: its sites and every feature of every choice. The networks of the
        next batch run on another thread meanwhile (ONNX Runtime releases the GIL), so they keep the cores busy
        while the caller decides this one; each batch's result is what it gives alone.

        Word-pair candidates are gathered with the LM (their evidence is the LM's) when the scorer weighs the
        ``pair`` feature (``word_pairs`` True/False: regardless)."""
        return self._score_batches(prepared.batches, prepared.settings, word_pairs)

    def _score_batches(self, batches: Sequence[Sequence[Chunk]], cfg: CorrectorConfig,
                       word_pairs: bool | None = None) -> Iterator[Scored]:
        if len(batches) < 2:
            for b in batches:
                yield self.score_sites(b, self.sites(b, cfg), cfg, word_pairs)
            return
        pool = self._ahead.get()
        pending = pool.submit(self.sites, batches[0], cfg)
        for k, batch in enumerate(batches):
            sites = pending.result()
            if k + 1 < len(batches):
                pending = pool.submit(self.sites, batches[k + 1], cfg)
            yield self.score_sites(batch, sites, cfg, word_pairs)

    def _batches(self, chunks: Sequence[Chunk], cfg: CorrectorConfig) -> tuple[tuple[Chunk, ...], ...]:
        """The chunks with sites, in network calls of similar length."""
        todo = [c for c in chunks if c.site_tokens()]
        # networks that run one unpadded row per call pay nothing for padding: no need to cut batches by length
        max_padding = math.inf if self.networks.rows_alone else 0.25
        lengths = [len(c.enc.ids) for c in todo]
        return tuple(tuple(todo[i] for i in idx) for idx in _length_batches(lengths, cfg.batch_size, max_padding))

    def sites(self, batch: Sequence[Chunk], settings: CorrectorConfig | None = None) -> Sites:
        """The networks on a batch of chunks: one site per editable, unprotected character that the discriminator
        suspects (P(replaced) at least ``rtd_floor``; a stray traditional character in simplified text always is),
        with its RTD probability and the generator's distribution."""
        cfg = settings if settings is not None else self.config
        ids, attn = _pad([c.enc.ids for c in batch])
        tokens = [c.site_tokens() for c in batch]
        width = max(len(t) for t in tokens)
        pos = np.zeros((len(batch), width), dtype=np.int64)
        floor = None
        if cfg.rtd_floor > 0:
            floor = np.zeros((len(batch), width), dtype=np.float64)
            for r, (c, t) in enumerate(zip(batch, tokens)):
                floor[r, : len(t)] = [0.0 if c.stray(c.enc.char_pos[k]) else cfg.rtd_floor for k in t]
        for r, t in enumerate(tokens):
            pos[r, : len(t)] = t
        rtd, lp, keep = self.networks.run(ids, attn, pos, floor)  # lp: (kept sites, V), in (chunk, position) order
        chunk_all = np.concatenate([np.full(len(t), r, np.int64) for r, t in enumerate(tokens)])
        tok_all = np.concatenate([np.asarray(t, np.int64) for t in tokens])
        kept = np.concatenate([keep[r, : len(t)] for r, t in enumerate(tokens)])
        chunk_i, tok = chunk_all[kept], tok_all[kept]
        char = np.array([batch[r].enc.char_pos[t] for r, t in zip(chunk_i, tok)], dtype=np.int64)
        src = [batch[r].text[p] for r, p in zip(chunk_i, char)]
        src_id = np.array([batch[r].enc.ids[t] for r, t in zip(chunk_i, tok)], dtype=np.int64)
        unsuspected = tuple((int(r), batch[r].enc.char_pos[t], float(rtd[r, t]))
                            for r, t in zip(chunk_all[~kept].tolist(), tok_all[~kept].tolist()))
        return Sites(chunk_i, char, src, src_id, rtd[chunk_i, tok].astype(np.float32), lp, unsuspected)

    def score_sites(self, batch: Sequence[Chunk], sites: Sites, cfg: CorrectorConfig,
                    word_pairs: bool | None = None) -> Scored:
        """Every feature of every choice of a batch's sites (what ``score`` does after the networks)."""
        custom: dict[str, set[str]] = {}
        for a, b in cfg.confusions:
            custom.setdefault(a, set()).add(b)
        use_lm = cfg.use_lm and self.has_lm
        want = self.ranker.scorer.weighs("pair") if word_pairs is None else word_pairs
        pairs = self.evidence.word_pairs(sites) if use_lm and want else None
        short = self.evidence.shortlist(sites, weights=self.ranker.shortlist, size=cfg.shortlist, top_k=cfg.top_k,
                                        custom=custom, pairs=pairs)
        texts = [c.text for c in batch]
        lm_ids = self.evidence.lm_ids(texts) if use_lm else None
        rows = self.evidence.rows(sites, texts, short, lm_ids, pairs)
        rows.X.setflags(write=False)
        return Scored(tuple(batch), sites, rows, tuple(lm_ids) if lm_ids is not None else None)

    def decide(self, scored: Scored, settings: CorrectorConfig | None = None) -> Decided:
        """One status per site of a scored batch (the ranker's rounds: ``corrector.decide``), and the edits."""
        return decide(scored, self.ranker, self.evidence, self._in_force(settings))

    def threshold(self, settings: CorrectorConfig | None = None) -> float:
        """The confidence threshold in force for these settings (the bundle's unless they set one)."""
        threshold = self._in_force(settings).threshold
        assert threshold is not None
        return threshold

    def _in_force(self, settings: CorrectorConfig | None, call: dict[str, Any] | None = None) -> CorrectorConfig:
        """``settings`` (default: this Corrector's) with ``call``'s, the bundle's threshold where none is set."""
        return in_force(loaded=settings if settings is not None else self.config, call=call,
                        thresholds=self.ranker.threshold_for, has_lm=self.has_lm)

    # ---- helpers ----------------------------------------------------------------------------------

    def _settings(self, texts: Sequence[str], settings: dict[str, Any]) -> CorrectorConfig:
        if isinstance(texts, str):
            raise CorrectorError("texts must be a list of strings, not one string")
        for t in texts:
            if not isinstance(t, str):
                raise CorrectorError(f"texts must be strings, got {type(t).__name__}")
        try:
            cfg = self._in_force(None, settings)
        except (TypeError, ValueError) as e:
            raise CorrectorError(str(e)) from None
        if cfg.threshold is not None:
            top = self.ranker.pick(cfg.use_lm and self.has_lm).calibration[1][-1]
            if cfg.threshold > top:
                raise CorrectorError(f"threshold {cfg.threshold:g} is above the highest confidence this bundle's ranker "
                                     f"gives{'' if cfg.use_lm and self.has_lm else ' without the LM'} ({top:g}): "
                                     "no edit could ever be made")
        return cfg


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


def _scrub_surrogates(text: str) -> str:
    """Lone surrogates cannot be encoded; stand in U+FFFD (same length, never edited)."""
    if not any("\ud800" <= c <= "\udfff" for c in text):
        return text
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
