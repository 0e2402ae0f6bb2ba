"""Count and estimate a character LM in bounded memory, the way KenLM's lmplz does over billions of words: count the
text in chunks, spill each chunk's sorted counts to disk as a run, then merge the runs one key range at a time.

    chunks of lines --count (local, or Ray tasks)--> runs: per chunk and order, sorted keys + counts (.npy)
    runs --merge a key range at a time--> Kneser-Ney statistics of every n-gram --> the kept n-grams in memory

Peak memory depends on ``chunk_chars`` (the text counted at once), ``part_entries`` (the n-grams merged at once) and
the n-grams kept after pruning, never on the size of the text. Every statistic is computed exactly as the in-memory
estimator (``char_lm_estimate.estimate_kn`` / ``estimate_sb`` over ``count_all_orders``) computes it, so both give
the same tables; the chunks are cut the same way whichever engine counts them, so the files are the same bytes.

Kneser-Ney needs, for every n-gram of order k < N, the number of distinct ids seen before it (its continuation
count): the distinct (k+1)-grams are merged first (orders go from N down), each key range's suffixes are counted
and spilled as runs of their own, and order k's merge reads them back over the same key range. Key ranges are cut at
multiples of the vocabulary size, so every context's n-grams meet in one range: its totals (adjusted counts, and how
many of them are 1, 2, 3 or more) are summed there. What is kept (raw count >= the order's threshold; thresholds must
not fall with the order, so every kept n-gram's prefix and suffix are kept too) stays in memory for the estimate.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm import BOS, N_SPECIALS
from corrector.evidence.char_lm_estimate import (
    SB_ALPHA,
    UNIGRAM_BOS_LOGPROB,
    Tables,
    backoffs_renormalised,
    codepoints,
    count_all_orders,
    discounts_from_counts,
    encode_stream,
    log,
    make_lut,
    peak_rss_mb,
    run_lengths,
    vocab_from_counts,
)

from ..data.text_files import corpus_files, open_text

CHUNK_CHARS = 8_000_000  # characters counted at once (about 0.6 GB at order 5)
PART_ENTRIES = 24_000_000  # run entries merged at once (about 1.5 GB)
SAMPLE_EVERY = 4096  # run keys sampled to cut the key ranges
THRESHOLDS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 30, 50)  # counts the log reports n-grams at or above


# ---------------------------------------------------------------------------------------------- reading
def lines_of(files: Sequence[Path], holdout_every: int) -> Iterator[tuple[bool, str]]:
    """(held out?, line) for every non-empty line of the files in order; every ``holdout_every``-th is held out
    (``char_lm.read_corpus``'s rule)."""
    i = 0
    for f in files:
        with open_text(f) as fh:
            for line in fh:
                line = line.rstrip("\n")
                if not line:
                    continue
                i += 1
                yield holdout_every > 0 and i % holdout_every == 0, line


def held_out_lines(corpus: Path, holdout_every: int) -> list[str]:
    """The lines a build of ``corpus`` holds out, read without keeping the rest."""
    return [line for is_held, line in lines_of(corpus_files(corpus), holdout_every) if is_held]


def chunks(files: Sequence[Path], holdout_every: int, chunk_chars: int, held: list[str] | None = None
           ) -> Iterator[list[str]]:
    """The training lines in chunks of about ``chunk_chars`` characters (the same cut every time); held-out lines go
    to ``held`` when given."""
    part: list[str] = []
    size = 0
    for is_held, line in lines_of(files, holdout_every):
        if is_held:
            if held is not None:
                held.append(line)
            continue
        part.append(line)
        size += len(line) + 1
        if size >= chunk_chars:
            yield part
            part, size = [], 0
    if part:
        yield part


# ---------------------------------------------------------------------------------------------- counting
def count_chunk(lines: list[str], lut: np.ndarray, order: int, base: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One chunk's n-grams of every order: sorted keys and counts (int32)."""
    stream = encode_stream(codepoints(lines), lut)
    return [(k, c.astype(np.int32)) for k, c in count_all_orders(stream, order, base, quiet=True)]


@dataclass
class Runs:
    """Spilled runs: for each order, the files of every run and the weight its counts are taken with."""

    home: Path
    order: int
    files: dict[int, list[tuple[Path, Path, int]]] = field(default_factory=dict)

    def add(self, name: str, counted: list[tuple[np.ndarray, np.ndarray]], weight: int = 1, first: int = 1) -> None:
        for k, (keys, cnt) in enumerate(counted, first):
            kp, cp = self.home / f"{name}_o{k}_keys.npy", self.home / f"{name}_o{k}_counts.npy"
            np.save(kp, keys)
            np.save(cp, cnt)
            self.files.setdefault(k, []).append((kp, cp, weight))

    def with_run(self, other: Runs) -> Runs:
        """These runs and ``other``'s together (the files are shared, not copied)."""
        out = Runs(self.home, self.order, {k: list(v) for k, v in self.files.items()})
        for k, v in other.files.items():
            out.files.setdefault(k, []).extend(v)
        return out


def count_runs(batches: Iterator[list[str]], lut: np.ndarray, order: int, base: int, home: Path, engine: str = "local",
               ray_address: str | None = None, ray_cpus: int | None = None) -> tuple[Runs, int]:
    """Count each batch of lines into a run under ``home``; (runs, tokens counted). ``engine`` "ray" counts the
    batches as Ray tasks (a local runtime, or the cluster at ``ray_address``), at most twice as many in flight as
    the cluster has CPUs; the runs are written by this process in batch order either way."""
    home.mkdir(parents=True, exist_ok=True)
    runs = Runs(home, order)
    tokens = 0

    def keep(i: int, counted: list[tuple[np.ndarray, np.ndarray]]) -> None:
        nonlocal tokens
        tokens += int(counted[0][1][counted[0][0] != np.uint64(BOS)].sum())
        runs.add(f"run{i:05d}", counted)
        log(f"  run {i}: {counted[-1][0].size:,} distinct {order}-grams (peak {peak_rss_mb():.0f} MB)")

    if engine == "local":
        for i, lines in enumerate(batches):
            keep(i, count_chunk(lines, lut, order, base))
        return runs, tokens
    from corrector.batch.on_ray import ray_module

    ray = ray_module()
    started = not ray.is_initialized()
    if started:
        ray.init(address=ray_address, num_cpus=None if ray_address else ray_cpus, include_dashboard=False,
                 log_to_driver=False)
    try:
        task = ray.remote(count_chunk)
        lut_ref = ray.put(lut)
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending: list = []
        done = 0
        for lines in batches:
            pending.append(task.remote(lines, lut_ref, order, base))
            while len(pending) >= limit:
                keep(done, ray.get(pending.pop(0)))
                done += 1
        for ref in pending:
            keep(done, ray.get(ref))
            done += 1
    finally:
        if started:
            ray.shutdown()
    return runs, tokens


# ---------------------------------------------------------------------------------------------- merging
def key_ranges(run_files: list[tuple[Path, Path, int]], group: int, part_entries: int) -> list[tuple[int, int]]:
    """[lo, hi) key ranges of about ``part_entries`` run entries each, cut at multiples of ``group``; the last
    range ends at 2^64."""
    total = sum(np.load(kp, mmap_mode="r").shape[0] for kp, _, _ in run_files)
    parts = max(1, math.ceil(total / part_entries))
    cuts: list[int] = []
    if parts > 1:
        sample = np.sort(np.concatenate([np.load(kp, mmap_mode="r")[::SAMPLE_EVERY] for kp, _, _ in run_files]))
        if sample.size:
            at = sample[(np.arange(1, parts) * sample.size) // parts].astype(object)
            cuts = sorted({int(x) // group * group for x in at} - {0})
    bounds = [0, *cuts, 1 << 64]
    return list(zip(bounds[:-1], bounds[1:]))


def merged(run_files: list[tuple[Path, Path, int]], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The keys in [lo, hi) over every run, once each, with their weighted counts summed (int64); keys whose sum is
    not positive are dropped (a run of negative weight takes text out)."""
    keys, cnts = [], []
    for kp, cp, w in run_files:
        k = np.load(kp, mmap_mode="r")
        a = int(np.searchsorted(k, np.uint64(lo)))
        b = int(np.searchsorted(k, np.uint64(hi))) if hi < 1 << 64 else k.shape[0]
        if b > a:
            keys.append(np.asarray(k[a:b]))
            cnts.append(np.load(cp, mmap_mode="r")[a:b].astype(np.int64) * w)
    if not keys:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    allk = np.concatenate(keys)
    allc = np.concatenate(cnts)
    o = np.argsort(allk, kind="stable")
    allk, allc = allk[o], allc[o]
    starts = np.flatnonzero(np.concatenate(([True], allk[1:] != allk[:-1])))
    sums = np.add.reduceat(allc, starts)
    keep = sums > 0
    return allk[starts][keep], sums[keep]


# ---------------------------------------------------------------------------------------------- statistics
@dataclass
class OrderStats:
    """What the estimate needs of one order: the kept n-grams (sorted keys), their raw and adjusted counts, their
    context's totals over every n-gram of the order, and the count-of-counts of the adjusted counts."""

    keys: np.ndarray
    raw: np.ndarray
    adj: np.ndarray
    ctx_adj: np.ndarray  # sum of adjusted counts over the context's n-grams
    ctx_raw: np.ndarray  # sum of raw counts over the context's n-grams (stupid backoff)
    ctx_n: np.ndarray  # (3, kept): how many of the context's n-grams have adjusted count 1, 2, >= 3
    count_of_counts: np.ndarray  # adjusted counts 0..4 and >= 5 over every n-gram of the order
    distinct: int
    raw_at_least: dict[int, int]  # how many n-grams of the order have a raw count >= t (for choosing --prune)


def order_stats(runs: Runs, k: int, base: int, min_count: int, ext_runs: list[tuple[Path, Path, int]] | None,
                spill: Callable[[str, tuple[np.ndarray, np.ndarray]], None] | None, part_entries: int) -> OrderStats:
    """Merge order ``k``'s runs one key range at a time: its statistics, and (``spill``) each range's suffix
    continuation counts as a run for order k - 1. ``ext_runs``: the continuation runs of order k (None at the top
    order, whose adjusted counts are raw)."""
    B = np.uint64(base)
    kept: dict[str, list[np.ndarray]] = {n: [] for n in ("keys", "raw", "adj", "ctx_adj", "ctx_raw", "ctx_n")}
    coc = np.zeros(6, dtype=np.int64)
    hist = np.zeros(THRESHOLDS[-1] + 1, dtype=np.int64)
    distinct = 0
    for p, (lo, hi) in enumerate(key_ranges(runs.files[k], base if k > 1 else 1, part_entries)):
        keys, raw = merged(runs.files[k], lo, hi)
        if not keys.size:
            continue
        distinct += keys.size
        hist += np.bincount(np.minimum(raw, THRESHOLDS[-1]), minlength=THRESHOLDS[-1] + 1)
        if spill is not None and k > 1:
            suf = keys % np.uint64(base ** (k - 1))
            suf.sort()
            sk, sc = run_lengths(suf)
            spill(f"ext{p:05d}", (sk, sc.astype(np.int32)))
            del suf, sk, sc
        if ext_runs is None:
            adj = raw.copy()
        else:
            ek, ec = merged(ext_runs, lo, hi)
            adj = np.zeros(keys.size, dtype=np.int64)
            at = np.searchsorted(keys, ek)
            if ek.size and (at.max() >= keys.size or not np.array_equal(keys[at], ek)):
                raise AssertionError("a continuation of an n-gram that was not counted")
            adj[at] = ec
            bos = (keys // np.uint64(base ** (k - 1))) == np.uint64(BOS) if k > 1 else keys == np.uint64(BOS)
            adj[bos] = raw[bos]
            if k == 1:
                adj[keys == np.uint64(BOS)] = 0  # <s> is never predicted
        coc += np.bincount(np.minimum(adj, 5), minlength=6)
        m = raw >= max(1, min_count) if k > 1 else np.ones(keys.size, dtype=bool)
        if k > 1:
            ctx = keys // B
            starts = np.flatnonzero(np.concatenate(([True], ctx[1:] != ctx[:-1])))
            gid = np.cumsum(np.concatenate(([True], ctx[1:] != ctx[:-1]))) - 1
            sums = {"ctx_adj": np.add.reduceat(adj, starts), "ctx_raw": np.add.reduceat(raw, starts)}
            n123 = np.stack([np.add.reduceat((adj == 1).astype(np.int64), starts),
                             np.add.reduceat((adj == 2).astype(np.int64), starts),
                             np.add.reduceat((adj >= 3).astype(np.int64), starts)])
            g = gid[m]
            kept["ctx_adj"].append(sums["ctx_adj"][g])
            kept["ctx_raw"].append(sums["ctx_raw"][g])
            kept["ctx_n"].append(n123[:, g])
        kept["keys"].append(keys[m])
        kept["raw"].append(raw[m])
        kept["adj"].append(adj[m])
    cat = {n: (np.concatenate(v, axis=-1) if v else np.zeros((3, 0) if n == "ctx_n" else 0, dtype=np.int64))
           for n, v in kept.items()}
    if not cat["keys"].size:
        cat["keys"] = cat["keys"].astype(np.uint64)
    at_least = np.cumsum(hist[::-1])[::-1]
    return OrderStats(cat["keys"], cat["raw"], cat["adj"], cat["ctx_adj"], cat["ctx_raw"], cat["ctx_n"], coc,
                      distinct, {t: int(at_least[t]) for t in THRESHOLDS})


def statistics(runs: Runs, order: int, base: int, prune: Sequence[int], part_entries: int = PART_ENTRIES
               ) -> list[OrderStats]:
    """Every order's statistics up to ``order`` (at most the runs' order), from the top order down (each order's
    merge spills the continuation runs the order below it reads, under the runs' folder)."""
    if any(prune[k] < prune[k - 1] for k in range(2, order)):
        raise SystemExit(f"--prune {','.join(map(str, prune))}: thresholds must not fall with the order from order 2 "
                         "on (so that every kept n-gram's prefix and suffix are kept)")
    stats: list[OrderStats | None] = [None] * order
    ext: list[tuple[Path, Path, int]] | None = None
    ext_home = runs.home
    for k in range(order, 0, -1):
        home = Path(tempfile.mkdtemp(prefix=f"ext_o{k - 1}_", dir=runs.home))
        spilled: list[tuple[Path, Path, int]] = []

        def spill(name: str, arrays: tuple[np.ndarray, np.ndarray], home: Path = home,
                  spilled: list = spilled) -> None:
            home.mkdir(parents=True, exist_ok=True)
            kp, cp = home / f"{name}_keys.npy", home / f"{name}_counts.npy"
            np.save(kp, arrays[0])
            np.save(cp, arrays[1])
            spilled.append((kp, cp, 1))

        t0 = time.time()
        stats[k - 1] = order_stats(runs, k, base, prune[k - 1], ext, spill if k > 1 else None, part_entries)
        if ext is not None:
            shutil.rmtree(ext_home, ignore_errors=True)
        ext, ext_home = spilled, home
        s = stats[k - 1]
        assert s is not None
        log(f"  order {k}: {s.distinct:,} distinct, {s.keys.size:,} kept ({time.time() - t0:.0f}s, "
            f"peak {peak_rss_mb():.0f} MB); with count >= t: "
            + ", ".join(f"{t}:{n:,}" for t, n in s.raw_at_least.items()))
    return [s for s in stats if s is not None]


# ---------------------------------------------------------------------------------------------- estimates
def estimate_kn_from(stats: list[OrderStats], base: int) -> Tables:
    """Interpolated modified Kneser-Ney in backoff form from the statistics (``char_lm_estimate.estimate_kn``'s
    arithmetic on the kept n-grams)."""
    keys_out: list[np.ndarray] = []
    p_out: list[np.ndarray] = []
    discounts: list[tuple[float, float, float]] = []
    for k, s in enumerate(stats, 1):
        d1, d2, d3 = discounts_from_counts(s.count_of_counts)
        discounts.append((d1, d2, d3))
        dvec = np.array([0.0, d1, d2, d3], dtype=np.float64)
        disc = dvec[np.minimum(s.adj, 3)]
        if k == 1:
            a = s.adj
            total = float(a.sum())
            n1, n2, n3 = (a == 1).sum(), (a == 2).sum(), (a >= 3).sum()
            gamma0 = (d1 * n1 + d2 * n2 + d3 * n3) / total
            full = np.zeros(base, dtype=np.float64)
            full[s.keys.astype(np.int64)] = np.maximum(a - disc, 0.0) / total
            full += gamma0 / (base - 1)
            full[BOS] = 0.0
            keys_out.append(np.arange(base, dtype=np.uint64))
            p_out.append(full)
            continue
        c_h = s.ctx_adj.astype(np.float64)
        gam = (d1 * s.ctx_n[0] + d2 * s.ctx_n[1] + d3 * s.ctx_n[2]) / c_h
        alpha = (s.adj - disc) / c_h
        suf = s.keys % np.uint64(base ** (k - 1))
        pos = suf.astype(np.int64) if k == 2 else np.searchsorted(keys_out[k - 2], suf)
        keys_out.append(s.keys)
        p_out.append(alpha + gam * p_out[k - 2][pos])
    logbow = backoffs_renormalised(keys_out, p_out, base)
    logp = [np.log(np.maximum(p, 1e-300)) for p in p_out]
    logp[0][BOS] = UNIGRAM_BOS_LOGPROB
    return Tables(keys_out, logp, logbow, discounts)


def estimate_sb_from(stats: list[OrderStats], base: int) -> Tables:
    """Stupid backoff from the statistics (``char_lm_estimate.estimate_sb``'s arithmetic)."""
    keys_out, lp_out, lb_out = [], [], []
    order = len(stats)
    for k, s in enumerate(stats, 1):
        if k == 1:
            full = np.zeros(base, dtype=np.float64)
            full[s.keys.astype(np.int64)] = s.raw
            full[BOS] = 0
            full = np.maximum(full, 0.5)
            lp = np.log(full / full[np.arange(base) != BOS].sum())
            lp[BOS] = UNIGRAM_BOS_LOGPROB
            keys_out.append(np.arange(base, dtype=np.uint64))
            lp_out.append(lp)
        else:
            keys_out.append(s.keys)
            lp_out.append(np.log(s.raw / s.ctx_raw.astype(np.float64)))
        n = keys_out[-1].size
        lb_out.append(np.full(n, math.log(SB_ALPHA)) if k < order else np.zeros(n))
    return Tables(keys_out, lp_out, lb_out, [])


# ---------------------------------------------------------------------------------------------- the whole count
@dataclass
class TextCount:
    """What counting a training text gives every estimate and meta.json, however the n-grams were counted."""

    base: int  # ids, specials included
    vocab_cps: np.ndarray
    vocab_counts: np.ndarray
    coverage: dict[str, float]
    lut: np.ndarray
    held: list[str]
    files: list[str]
    n_tokens: int  # counted tokens (in-domain ones as often as they were counted)
    in_domain: dict | None  # lines, weight, source (None: the corpus alone)
    seconds: float


@dataclass(kw_only=True)
class ExternalCount(TextCount):
    """The text's n-grams as spilled runs: the corpus's, and the in-domain lines' apart."""

    runs: Runs
    in_domain_runs: Runs | None
    corpus_tokens: int
    work: Path
    own_work: bool  # ``work`` is a temporary folder ``close`` removes

    def close(self) -> None:
        if self.own_work:
            shutil.rmtree(self.work, ignore_errors=True)


def count_external(corpus: Path, max_order: int, vocab_size: int, holdout_every: int, in_domain: Sequence[str] = (),
                   in_domain_weight: int = 0, work: Path | None = None, engine: str = "local",
                   chunk_chars: int = CHUNK_CHARS, ray_address: str | None = None,
                   ray_cpus: int | None = None) -> ExternalCount:
    """Two passes over the corpus: the vocabulary (character counts), then the runs. ``work`` holds the runs
    (default: a temporary folder, removed by ``close``)."""
    t0 = time.time()
    files = corpus_files(corpus)
    counts = np.zeros(0x110000, dtype=np.int64)
    n_lines = 0
    for lines in chunks(files, holdout_every, chunk_chars):
        counts += np.bincount(codepoints(lines), minlength=0x110000)
        n_lines += len(lines)
    extra = list(in_domain) if in_domain_weight > 0 else []
    if extra:
        counts += in_domain_weight * np.bincount(codepoints(extra), minlength=0x110000)
    vocab_cps, vocab_counts, coverage = vocab_from_counts(counts, vocab_size)
    base = vocab_cps.size + N_SPECIALS
    lut = make_lut(vocab_cps)
    log(f"read {n_lines:,} training lines ({len(extra):,} in-domain lines x {in_domain_weight}); vocab "
        f"{vocab_cps.size} chars ({time.time() - t0:.0f}s); counting in chunks of {chunk_chars:,} characters")
    own = work is None
    home = Path(tempfile.mkdtemp(prefix="char_lm_runs_")) if work is None else work
    held: list[str] = []
    runs, tokens = count_runs(chunks(files, holdout_every, chunk_chars, held), lut, max_order, base, home / "corpus",
                              engine, ray_address, ray_cpus)
    dom = None
    extra_tokens = 0
    if extra:
        dom = in_domain_runs(extra, in_domain_weight, lut, max_order, base, home / "in_domain")
        extra_tokens = in_domain_weight * in_domain_tokens(extra, lut)
    meta = ({"lines": len(extra), "weight": in_domain_weight,
             "source": "targets of the real training pairs (dev split held out)"} if extra else None)
    return ExternalCount(base, vocab_cps, vocab_counts, coverage, lut, held, [f.name for f in files],
                         tokens + extra_tokens, meta, time.time() - t0, runs=runs, in_domain_runs=dom,
                         corpus_tokens=tokens, work=home, own_work=own)


def in_domain_runs(lines: Sequence[str], weight: int, lut: np.ndarray, order: int, base: int, home: Path) -> Runs:
    home.mkdir(parents=True, exist_ok=True)
    runs = Runs(home, order)
    if lines:
        runs.add("run", count_chunk(list(lines), lut, order, base), weight)
    return runs


def in_domain_tokens(lines: Sequence[str], lut: np.ndarray) -> int:
    stream = encode_stream(codepoints(list(lines)), lut)
    return int((stream != BOS).sum())


def all_runs(c: ExternalCount, in_domain: Runs | None = None) -> Runs:
    """The corpus runs with ``in_domain`` (default: the counted in-domain runs)."""
    dom = in_domain if in_domain is not None else c.in_domain_runs
    return c.runs.with_run(dom) if dom is not None else c.runs


def vocab_counts_of(stats: list[OrderStats], c: ExternalCount) -> np.ndarray:
    """Each vocabulary character's training count under these statistics (the unigram raw counts)."""
    uni = np.zeros(c.base, dtype=np.int64)
    uni[stats[0].keys.astype(np.int64)] = stats[0].raw
    return uni[N_SPECIALS:]
