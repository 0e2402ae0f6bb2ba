"""Estimate a character n-gram LM from the corpus and write it in the format ``corrector.evidence.char_lm`` reads.

    python -m training.evidence.char_lm --corpus ../shared/data/corpus --out DIR [--order 5] [--smoothing kn|sb]
        [--prune 0,0,5,8,10] [--vocab-size 7128] [--quant 8] [--holdout-every 200]

Everything is vectorised numpy: text -> int ids, n-grams packed into uint64 keys (first id most significant,
base B = vocabulary size incl. specials), counted with sort + run lengths.

Smoothing
  kn  interpolated modified Kneser-Ney (Chen & Goodman 1998): three discounts per order from the
      count-of-counts of that order's (adjusted) counts; lower orders use continuation counts N1+(. h w)
      except for n-grams that start with <s> (nothing can precede it), which keep raw counts (as KenLM).
      Unigrams interpolate with the uniform distribution over every predictable id (all but <s>).
      Written in backoff form: ln P(w | h) of each stored n-gram and ln backoff(h) of each context.
  sb  stupid backoff (Brants et al. 2007): relative frequencies, a constant backoff of 0.4 per step.

Pruning: ``--prune`` gives a minimum raw count per order (0/1 = keep all).  Prefixes and suffixes of every
kept n-gram are kept too, so contexts exist and backoff is well defined.  For KN the backoff weight of every
context is then recomputed so that each conditional distribution sums to one again:

    bow(h) = (1 - sum_{w kept} P(w | h)) / (1 - sum_{w kept} P(w | h'))

(with nothing pruned this is exactly the interpolation weight gamma(h)).

Quantisation: ``--quant 8`` stores ln P and ln backoff of orders >= 2 as uint8 codes into per-order
256-entry codebooks (equal-count bins, each code = mean of its bin; for backoffs code 0 is exactly 0),
like KenLM's ``-q 8 -b 8``; unigrams and keys stay exact.  ``--quant 0`` stores float32 values.

A deterministic slice of the corpus lines (every ``--holdout-every``-th line over the files in sorted name
order) is held out: excluded from all counting, and used for the held-out perplexity in ``meta.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm import BOS, N_SPECIALS, UNK, CharLM, key_offsets

# Counting and estimation live in corrector.evidence.char_lm_estimate, the on-disk formats and held-out scoring in
# corrector.evidence.char_lm_write (corrector adapt estimates and writes with them too);
# Tables, UNIGRAM_BOS_LOGPROB, kn_discounts and write_model are imported from here too.
from corrector.evidence.char_lm_estimate import (
    SB_ALPHA,
    choose_vocab,
    codepoints,
    count_all_orders,
    encode_stream,
    estimate_kn,
    estimate_sb,
    keep_masks,
    log,
    make_lut,
    peak_rss_mb,
)
from corrector.evidence.char_lm_estimate import UNIGRAM_BOS_LOGPROB as UNIGRAM_BOS_LOGPROB
from corrector.evidence.char_lm_estimate import Tables as Tables
from corrector.evidence.char_lm_estimate import kn_discounts as kn_discounts
from corrector.evidence.char_lm_write import (
    heldout_windows,
    normalised_sample,
    perplexity,
    write_model,
    write_nodes,
)

from ..data.text_files import corpus_files, file_lines
from .char_lm_external import (
    CHUNK_CHARS,
    PART_ENTRIES,
    ExternalCount,
    Runs,
    TextCount,
    all_runs,
    count_external,
    estimate_kn_from,
    estimate_sb_from,
    held_out_lines,
    in_domain_runs,
    in_domain_tokens,
    statistics,
    vocab_counts_of,
)

DEFAULT_VOCAB = 7128  # the most that keeps 5-gram keys (+ the lower orders' key ranges) inside uint64


def read_corpus(corpus: Path, holdout_every: int) -> tuple[list[str], list[str], list[str]]:
    """(train lines, held-out lines, file names). Every ``holdout_every``-th line (global count) is held out."""
    files = corpus_files(corpus)
    lines: list[str] = []
    for f in files:
        lines.extend(file_lines(f))
    held: list[str] = []
    if holdout_every > 0:
        held = lines[holdout_every - 1:: holdout_every]
        del lines[holdout_every - 1:: holdout_every]
    return lines, held, [f.name for f in files]


def evaluate(dirs: Sequence[Path], corpus: Path, holdout_every: int) -> int:
    """Held-out figures of built LMs (same held-out lines as the build), printed as JSON lines."""
    held = held_out_lines(corpus, holdout_every)
    for d in dirs:
        lm = CharLM.load(d)
        lut = make_lut(lm.codepoints[N_SPECIALS:])
        win = heldout_windows(held, lut, lm.order)
        res = {"lm": str(d), "order": lm.order, "smoothing": lm.smoothing, "prune": lm.meta.get("prune"),
               "ngrams": lm.meta.get("ngrams"), "size_bytes": lm.size_bytes(),
               "heldout_perplexity": round(perplexity(lm, win), 4), **normalised_sample(lm, win)}
        print(json.dumps(res, ensure_ascii=False), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------- main
def parse_prune(s: str, order: int) -> list[int]:
    v = [int(x) for x in s.split(",")] if s else []
    v = (v + [v[-1] if v else 0] * order)[:order]
    return v


@dataclass
class Variant:
    out: Path
    order: int
    smoothing: str
    prune: list[int]
    quant: int = 8
    fmt: str = "nodes"  # "nodes" (compact, quantised) or "hashed" (the v2 tables; the only one with --quant 0)


def in_domain_lines(data: Path, holdout: int, folds: int = 0, without_fold: int = -1) -> list[str]:
    """The correct (target) sides of the real training pairs (``training.data.splits.train_pairs``: the dev split
    and every test set excluded), one line each; with ``folds``, those outside fold ``without_fold``
    (``training.data.splits.text_folds``)."""
    from ..data.splits import text_folds, train_pairs

    targets = [t for _, t in train_pairs(data, holdout)]
    if folds:
        fold_of = text_folds(data, folds)
        targets = [t for t in targets if fold_of.get(t, 0) != without_fold]
    return targets


@dataclass(kw_only=True)
class Counted(TextCount):
    """The raw n-gram counts of one training text, held in memory (``count``): the reference the bounded-memory
    build (``char_lm_external``) is tested against."""

    ngrams: list[tuple[np.ndarray, np.ndarray]]  # per order: sorted packed keys, raw counts


def count(corpus: Path, max_order: int, vocab_size: int, holdout_every: int, in_domain: Sequence[str] = (),
          in_domain_weight: int = 0) -> Counted:
    """Count the corpus (less its held-out lines) plus ``in_domain`` lines ``in_domain_weight`` times each,
    up to ``max_order``; the vocabulary is the most frequent characters of that text."""
    t0 = time.time()
    key_offsets(max_order, vocab_size + N_SPECIALS)  # raises if the keys do not fit
    train, held, files = read_corpus(corpus, holdout_every)
    extra = list(in_domain) if in_domain_weight > 0 else []
    train.extend(extra * in_domain_weight)
    log(f"read {len(train):,} training lines ({len(extra):,} in-domain lines x {in_domain_weight}), "
        f"{len(held):,} held out ({time.time() - t0:.1f}s)")
    cps = codepoints(train)
    del train
    vocab_cps, vocab_counts, coverage = choose_vocab(cps, vocab_size)
    base = vocab_cps.size + N_SPECIALS  # fewer when the corpus has fewer distinct characters
    log(f"vocab {vocab_cps.size} chars: coverage {coverage}")
    lut = make_lut(vocab_cps)
    stream = encode_stream(cps, lut)
    del cps
    n_tokens = int((stream != BOS).sum())
    log(f"{stream.size:,} ids ({time.time() - t0:.1f}s); counting")
    ngrams = count_all_orders(stream, max_order, base)
    del stream
    for k, (_, raw) in enumerate(ngrams, 1):
        ths = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 50)
        log(f"  order {k}: n-grams with count >= t: " + ", ".join(f"{t}:{int((raw >= t).sum()):,}" for t in ths))
    meta = ({"lines": len(extra), "weight": in_domain_weight,
             "source": "targets of the real training pairs (dev split held out)"} if extra else None)
    return Counted(base, vocab_cps, vocab_counts, coverage, lut, held, files, n_tokens, meta, time.time() - t0,
                   ngrams=ngrams)


def build(corpus: Path, variants: Sequence[Variant], vocab_size: int, holdout_every: int,
          in_domain: Sequence[str] = (), in_domain_weight: int = 0, engine: str = "local", work: Path | None = None,
          chunk_chars: int = CHUNK_CHARS, part_entries: int = PART_ENTRIES) -> list[dict]:
    """Count once (up to the highest order asked for) in bounded memory (``char_lm_external``), then estimate and
    write every variant. ``in_domain`` lines are counted ``in_domain_weight`` times each on top of the corpus
    (never held out)."""
    c = count_external(corpus, max(v.order for v in variants), vocab_size, holdout_every, in_domain,
                       in_domain_weight, work, engine, chunk_chars)
    try:
        return write_variants(c, variants, holdout_every, external_estimate(c, all_runs(c), part_entries))
    finally:
        c.close()


Estimate = Callable[[Variant], tuple[Tables, np.ndarray]]  # a variant's tables and its characters' counts


def memory_estimate(c: Counted) -> Estimate:
    """Tables from counts held in memory (``count``): the reference the bounded-memory build is tested against."""
    def estimate(v: Variant) -> tuple[Tables, np.ndarray]:
        cnt = c.ngrams[: v.order]
        masks = keep_masks(cnt, v.prune, c.base)
        log(f"{v.out}: order {v.order} {v.smoothing} prune {v.prune}: kept {[int(m.sum()) for m in masks]}")
        return (estimate_kn if v.smoothing == "kn" else estimate_sb)(cnt, masks, c.base), c.vocab_counts
    return estimate


def external_estimate(c: ExternalCount, runs: Runs, part_entries: int = PART_ENTRIES) -> Estimate:
    """Tables from spilled runs, merged one key range at a time."""
    def estimate(v: Variant) -> tuple[Tables, np.ndarray]:
        log(f"{v.out}: order {v.order} {v.smoothing} prune {v.prune}")
        stats = statistics(runs, v.order, c.base, v.prune, part_entries)
        tables = (estimate_kn_from if v.smoothing == "kn" else estimate_sb_from)(stats, c.base)
        return tables, vocab_counts_of(stats, c)
    return estimate


def write_variants(c: TextCount, variants: Sequence[Variant], holdout_every: int,
                   estimate: Estimate | None = None) -> list[dict]:
    """Estimate (default: from counts in memory), write and evaluate (held-out perplexity) each variant."""
    metas = []
    estimate = estimate or memory_estimate(c)  # type: ignore[arg-type]  # (a Counted, when not given)
    for v in variants:
        t1 = time.time()
        tables, vocab_counts = estimate(v)
        missing_bow = 0.0 if v.smoothing == "kn" else math.log(SB_ALPHA)
        if v.fmt == "nodes" and v.quant:
            meta = write_nodes(v.out, tables, c.base, c.vocab_cps, vocab_counts, missing_bow)
        else:
            meta = write_model(v.out, tables, c.base, c.vocab_cps, vocab_counts, v.quant, missing_bow)
        build_s = c.seconds + time.time() - t1
        (v.out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        lm = CharLM.load(v.out)
        win = heldout_windows(c.held, c.lut, v.order)
        ppl = perplexity(lm, win)
        n_unk = int((win[:, -1] == UNK).sum())
        size = lm.size_bytes()
        meta.update({
            "smoothing": v.smoothing,
            "prune": v.prune,
            "discounts": tables.discounts,
            "sb_alpha": SB_ALPHA if v.smoothing == "sb" else None,
            "size_bytes": int(size),
            "heldout_perplexity": round(ppl, 4),
            **normalised_sample(lm, win),
            "heldout_perplexity_note": None if v.smoothing == "kn" else
            "stupid backoff scores do not sum to one: this 'perplexity' is not comparable with KN's",
            "heldout_tokens": int(win.shape[0]),
            "heldout_unk_tokens": n_unk,
            "heldout": f"every {holdout_every}th line of the files in sorted order (1-based)",
            "train_tokens": c.n_tokens,
            "vocab_coverage": c.coverage,
            "corpus_files": c.files,
            "in_domain": c.in_domain,
            "build_seconds": round(build_s, 1),
            "peak_rss_mb": round(peak_rss_mb(), 1),
        })
        (v.out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"  -> {size / 1e6:.1f} MB, held-out perplexity {ppl:.3f}")
        metas.append(meta)
        del tables
    return metas


def convert(from_arpa: Path | None, to_arpa: Path | None, out: Path, quant: int, corpus: Path,
            holdout_every: int) -> int:
    from training.evidence.char_lm_arpa import arpa_to_tables, write_arpa

    t0 = time.time()
    if to_arpa is not None:
        counts = write_arpa(to_arpa, out)
        print(json.dumps({"out": str(out), "ngrams": counts, "seconds": round(time.time() - t0, 1)}))
        return 0
    assert from_arpa is not None
    tables, vocab_cps, order, added = arpa_to_tables(from_arpa)
    base = vocab_cps.size + N_SPECIALS
    meta = write_model(out, tables, base, vocab_cps, np.zeros(vocab_cps.size, dtype=np.int64), quant, 0.0)
    meta.update({"smoothing": "arpa", "source": str(from_arpa), "added_for_closure": added[1:],
                 "prune": None})
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    if corpus.is_dir():
        held = held_out_lines(corpus, holdout_every)
        lm = CharLM.load(out)
        win = heldout_windows(held, make_lut(vocab_cps), order)
        meta["heldout_perplexity"] = round(perplexity(lm, win), 4)
        meta["heldout"] = f"every {holdout_every}th line of {corpus} (sorted files, 1-based)"
    meta["size_bytes"] = int(sum(f.stat().st_size for f in out.iterdir() if f.suffix == ".npy"))
    meta["build_seconds"] = round(time.time() - t0, 1)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: meta.get(k) for k in ("order", "ngrams", "added_for_closure", "size_bytes",
                                                "heldout_perplexity")}))
    return 0


def parser() -> argparse.ArgumentParser:
    """The command's flags (the recipe checks its commands against them)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="--out, --order, --smoothing, --prune and --quant may be repeated to write several "
                                        "models from one counting pass (single values apply to all).")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--out", type=Path, action="append", required=True)
    ap.add_argument("--order", type=int, action="append")
    ap.add_argument("--smoothing", choices=("kn", "sb"), action="append")
    ap.add_argument("--prune", action="append", help="minimum raw count per order, comma-separated "
                    "(default 0,0,5,8,10: about 60 MB at order 5)")
    ap.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB, help="characters, specials excluded")
    ap.add_argument("--quant", type=int, choices=(0, 8), action="append", help="8 (default) or 0 = float32")
    ap.add_argument("--format", choices=("nodes", "hashed"), action="append", dest="fmt",
                    help="nodes (default: about 4.7 bytes an n-gram) or hashed (9; the format before 2026-11-29, "
                         "and the one that stores float32 values with --quant 0)")
    ap.add_argument("--holdout-every", type=int, default=200)
    ap.add_argument("--from-arpa", type=Path, help="convert this ARPA model (e.g. KenLM's) into --out")
    ap.add_argument("--to-arpa", type=Path, help="write the LM directory given here as ARPA text to --out")
    ap.add_argument("--reformat", type=Path, metavar="LM", help="write this quantised hashed-format LM into --out in "
                    "the node format, scoring exactly as before (training.evidence.char_lm_reformat)")
    ap.add_argument("--evaluate", action="store_true", help="only print held-out figures of the --out LMs")
    ap.add_argument("--in-domain", type=Path, metavar="DATA",
                    help="the shared data folder: also count the correct sides of its real training pairs (the "
                         "dev split held out; --in-domain-weight times each), so forms the corpus lacks but "
                         "correct CSC text keeps (甚么, 妳) are not 'fixed'")
    ap.add_argument("--in-domain-weight", type=int, default=10)
    ap.add_argument("--in-domain-holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split")
    ap.add_argument("--in-domain-folds", type=int, default=0, metavar="K",
                    help="also write K cross-fitting LMs to --fold-out/fold0 .. fold{K-1}, each without one fold's "
                         "in-domain lines (contiguous blocks of the files: essays stay whole), for training.fitting.fit "
                         "--fit-lm-folds")
    ap.add_argument("--fold-out", type=Path, help="where the --in-domain-folds LMs go")
    ap.add_argument("--engine", choices=("local", "ray"), default="local",
                    help="who counts the chunks: this process, or Ray tasks (a local runtime, or --ray-address); "
                         "the files are the same")
    ap.add_argument("--ray-address", help="a running Ray cluster to count on (every node must read --corpus)")
    ap.add_argument("--ray-cpus", type=int, help="CPUs of the local Ray runtime (default: all)")
    ap.add_argument("--work", type=Path, help="where the counted runs are spilled (default: a temporary folder, "
                    "removed afterwards; the runs take about 12 bytes per counted n-gram)")
    ap.add_argument("--chunk-chars", type=int, default=CHUNK_CHARS, help="characters counted at once")
    ap.add_argument("--part-entries", type=int, default=PART_ENTRIES, help="run entries merged at once")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    n = len(args.out)
    if args.evaluate:
        return evaluate(args.out, args.corpus, args.holdout_every)
    if args.reformat:
        if n != 1:
            ap.error("--reformat takes one --out")
        from training.evidence.char_lm_reformat import reformat

        meta = reformat(args.reformat, args.out[0])
        print(json.dumps({k: meta.get(k) for k in ("out", "format", "order", "ngrams", "size_bytes", "reformat_seconds")}))
        return 0
    if args.from_arpa or args.to_arpa:
        if n != 1:
            ap.error("--from-arpa / --to-arpa take one --out")
        return convert(args.from_arpa, args.to_arpa, args.out[0], (args.quant or [8])[0], args.corpus,
                       args.holdout_every)

    def each(xs: list | None, default: object) -> list:
        xs = xs or [default]
        if len(xs) not in (1, n):
            ap.error(f"give 1 or {n} values per option (one per --out)")
        return xs * n if len(xs) == 1 else xs

    orders, smooth, prunes = each(args.order, 5), each(args.smoothing, "kn"), each(args.prune, "0,0,5,8,10")
    quants = each(args.quant, 8)
    fmts = each(args.fmt, "nodes")
    if min(orders) < 2:
        ap.error("--order must be >= 2")
    variants = [Variant(o, k, s, parse_prune(p, k), q, f)
                for o, k, s, p, q, f in zip(args.out, orders, smooth, prunes, quants, fmts)]
    extra = in_domain_lines(args.in_domain, args.in_domain_holdout) if args.in_domain else []
    weight = args.in_domain_weight if args.in_domain else 0
    if args.in_domain_folds and not (args.in_domain and args.fold_out):
        ap.error("--in-domain-folds needs --in-domain and --fold-out")
    c = count_external(args.corpus, max(v.order for v in variants), args.vocab_size, args.holdout_every, extra,
                       weight, args.work, args.engine, args.chunk_chars, args.ray_address, args.ray_cpus)
    try:
        metas = write_variants(c, variants, args.holdout_every, external_estimate(c, all_runs(c), args.part_entries))
        K = args.in_domain_folds
        for k in range(K):  # each fold's LM: the corpus runs with the in-domain lines outside that fold
            lines = in_domain_lines(args.in_domain, args.in_domain_holdout, K, k)
            runs = in_domain_runs(lines, weight, c.lut, c.runs.order, c.base, c.work / f"in_domain_fold{k}")
            assert c.in_domain is not None
            fold = replace(c, n_tokens=c.corpus_tokens + weight * in_domain_tokens(lines, c.lut),
                           in_domain={**c.in_domain, "lines": len(lines), "fold": [k, K]})
            home = args.fold_out / f"fold{k}"
            fold_variants = [replace(v, out=home / v.out.name if n > 1 else home) for v in variants]
            write_variants(fold, fold_variants, args.holdout_every, external_estimate(c, all_runs(c, runs),
                                                                                      args.part_entries))
    finally:
        c.close()
    keys = ("order", "smoothing", "prune", "ngrams", "size_bytes", "heldout_perplexity", "build_seconds",
            "peak_rss_mb")
    for v, meta in zip(variants, metas):
        print(json.dumps({"out": str(v.out), **{k: meta[k] for k in keys}}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
