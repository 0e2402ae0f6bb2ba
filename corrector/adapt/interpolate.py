"""A character LM adapted to a domain's text: the text's own Kneser-Ney model, in the base LM's vocabulary and
order, interpolated with the base LM into one backoff model of the same format (static interpolation, as SRILM's
``ngram -mix-lm`` writes it).

For every n-gram that either model stores, ``P(w | h) = λ P_text(w | h) + (1 - λ) P_base(w | h)``, each model's
probability taken as it answers a query (backed off where it does not store the n-gram). Each context's backoff is
then set so that its distribution sums to one again (``mix_tables``); an n-gram
neither model stores backs off as in any backoff model. The union of two sets of n-grams closed under prefixes and
suffixes is closed too, so every context exists.

λ is the weight that gives a held-out slice of the text the lowest perplexity under the interpolation (EM over
the two models' probabilities of its characters), the text's model counted without that slice.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from corrector.evidence.char_lm import BOS, N_SPECIALS, PAD, CharLM, CharLMBase
from corrector.evidence.char_lm_base import pack, unpack
from corrector.evidence.char_lm_estimate import (
    UNIGRAM_BOS_LOGPROB,
    Tables,
    codepoints,
    context_and_suffix,
    count_all_orders,
    encode_stream,
    estimate_kn,
    keep_masks,
)
from corrector.evidence.char_lm_nodes import FORMAT as NODES
from corrector.evidence.char_lm_write import heldout_windows, write_model, write_nodes

CHUNK = 1_000_000  # windows scored per call
MAX_WEIGHT = 0.95  # the chosen weight of the text's model at most: the base LM always keeps a share


def text_tables(lines: Sequence[str], lm: CharLMBase, prune: Sequence[int]) -> tuple[Tables, np.ndarray]:
    """The KN model of ``lines`` in ``lm``'s vocabulary (its other characters are <unk>) and order, pruned by raw
    count per order as the LM builder prunes; and the count of every id in the text."""
    V, n = lm.vocab_size, lm.order
    stream = encode_stream(codepoints(lines), lm.lut)
    counts = count_all_orders(stream, n, V, quiet=True)
    tables = estimate_kn(counts, keep_masks(counts, prune, V), V)
    uni = np.zeros(V, dtype=np.int64)
    uni[counts[0][0].astype(np.int64)] = counts[0][1]
    return tables, uni


def write_tables(out: Path, t: Tables, like: CharLMBase, vocab_counts: np.ndarray, quant: int = 8) -> dict:
    """``t`` in ``like``'s vocabulary, written in its format (``quant`` 0: the hashed tables, unquantised, exact);
    the meta written to ``out/meta.json`` is returned."""
    cps = like.codepoints[N_SPECIALS:]
    counts = vocab_counts[N_SPECIALS:]
    if like.meta.get("format") == NODES and quant:
        meta = write_nodes(out, t, like.vocab_size, cps, counts, float(like.missing_bow))
    else:
        meta = write_model(out, t, like.vocab_size, cps, counts, quant, float(like.missing_bow))
    (out / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return meta


def window_logprobs(lm: CharLMBase, windows: np.ndarray) -> np.ndarray:
    """ln P of each (N, order) window, in chunks (float64)."""
    out = np.empty(windows.shape[0], dtype=np.float64)
    for i in range(0, windows.shape[0], CHUNK):
        out[i:i + CHUNK] = lm.logprob(windows[i:i + CHUNK])
    return out


def best_weight(lp_text: np.ndarray, lp_base: np.ndarray, iters: int = 200) -> float:
    """The λ of ``λ P_text + (1 - λ) P_base`` with the most likelihood of the held-out characters (EM)."""
    if lp_text.size == 0:
        return 0.0
    shift = np.maximum(lp_text, lp_base)
    pt, pb = np.exp(lp_text - shift), np.exp(lp_base - shift)
    lam = 0.5
    for _ in range(iters):
        post = lam * pt / (lam * pt + (1 - lam) * pb)
        new = float(post.mean())
        if abs(new - lam) < 1e-6:
            return new
        lam = new
    return lam


def mixed_perplexity(lp_text: np.ndarray, lp_base: np.ndarray, lam: float) -> float:
    if lp_text.size == 0:
        return float("nan")
    mix = np.logaddexp(np.log(lam) + lp_text, np.log1p(-lam) + lp_base) if 0 < lam < 1 else (
        lp_text if lam >= 1 else lp_base)
    return math.exp(-float(mix.mean()))


def mix_tables(base: CharLMBase, text: CharLMBase, text_tables_: Tables, lam: float) -> Tables:
    """The interpolated model: every n-gram of ``base`` or of the text's tables (``text`` is those tables loaded).

    Each context's backoff is the one that makes its distribution sum to one. With U(h) the continuations of h
    that either model stores and D(h) = 1 - sum over U(h) of P(w | h') (h' is h less its first id), the mass a
    model leaves to the rest is bow(h) D(h), so the mixture's backoff is the two models' backoffs averaged with
    weights λ D_text(h) and (1 - λ) D_base(h). Unlike summing the stored probabilities, this stays exact when the
    base LM's probabilities are quantised (their sums can pass one)."""
    V, n = base.vocab_size, base.order
    stored = base.stored_ngrams()
    keys: list[np.ndarray] = []
    pb: list[np.ndarray] = []  # each model's probability of every n-gram of the union, as it answers a query
    pt: list[np.ndarray] = []
    bb: list[np.ndarray] = []  # each model's backoff of every n-gram of the union (1 where it stores none)
    bt: list[np.ndarray] = []
    for k in range(1, n + 1):
        base_keys = pack(stored[k][0], V)
        union = np.union1d(base_keys, text_tables_.keys[k - 1]) if k > 1 else np.arange(V, dtype=np.uint64)
        if k == 1:
            pb.append(np.exp(np.asarray(stored[1][1], dtype=np.float64)))
            pt.append(np.exp(text_tables_.logp[0]))
        else:
            ids = unpack(union, k, V)
            win = np.concatenate((np.full((ids.shape[0], n - k), PAD, dtype=np.int32), ids), axis=1)
            pb.append(np.exp(window_logprobs(base, win)))
            pt.append(np.exp(window_logprobs(text, win)))
        bb.append(np.exp(_aligned(union, base_keys, np.asarray(stored[k][2], dtype=np.float64))))
        bt.append(np.exp(_aligned(union, text_tables_.keys[k - 1], text_tables_.logbow[k - 1])))
        keys.append(union)
    probs = [lam * t + (1 - lam) * b for t, b in zip(pt, pb)]
    probs[0][BOS] = 0.0
    logbow: list[np.ndarray] = []
    for k in range(1, n + 1):
        if k == n:
            logbow.append(np.zeros(keys[k - 1].size, dtype=np.float64))
            continue
        ci, si = context_and_suffix(keys, k, V)
        m = keys[k - 1].size
        d_b = np.maximum(1.0 - np.bincount(ci, weights=pb[k - 1][si], minlength=m), 1e-9)
        d_t = np.maximum(1.0 - np.bincount(ci, weights=pt[k - 1][si], minlength=m), 1e-9)
        wt, wb = lam * d_t, (1 - lam) * d_b
        logbow.append(np.log((wt * bt[k - 1] + wb * bb[k - 1]) / (wt + wb)))
    logp = [np.log(np.maximum(p, 1e-300)) for p in probs]
    logp[0][BOS] = UNIGRAM_BOS_LOGPROB
    return Tables(keys, logp, logbow, text_tables_.discounts)


def _aligned(keys: np.ndarray, have: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (of the sorted keys ``have``) at each of ``keys``; 0 where ``have`` lacks the key."""
    out = np.zeros(keys.size, dtype=np.float64)
    if have.size:
        pos = np.minimum(np.searchsorted(have, keys), have.size - 1)
        hit = have[pos] == keys
        out[hit] = values[pos[hit]]
    return out


def base_counts(lm: CharLMBase) -> np.ndarray:
    """The training count of every id, from the LM's vocab.txt (0 where it gives none)."""
    out = np.zeros(lm.vocab_size, dtype=np.int64)
    vocab = lm.path / "vocab.txt"
    if vocab.is_file():
        for line in vocab.read_text(encoding="utf-8").splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) < out.size:
                out[int(parts[0])] = int(parts[2])
    return out


def adapt(lines: Sequence[str], base_dir: Path, out: Path, prune: Sequence[int], holdout_every: int = 20,
          weight: float | None = None, without: Path | None = None, log=print) -> dict:
    """Write the base LM at ``base_dir`` adapted to ``lines`` into ``out``; the facts of the adaptation are
    returned (and recorded in ``out/meta.json`` under ``adapted``).

    Every ``holdout_every``-th line is held out of the text's model that the weight is chosen with (``weight``
    None: by EM on those of them that no other line repeats, at most ``MAX_WEIGHT``); ``out`` interpolates the model of every line. ``without``: also write there the
    interpolation of the model without the held-out lines (to judge decoding on them)."""
    base = CharLM.load(base_dir)
    if len(prune) != base.order:
        raise ValueError(f"prune needs {base.order} counts (one per order of the base LM), got {len(prune)}")
    train, held = split(lines, holdout_every)
    seen = set(train)
    held = [x for x in held if x not in seen]  # a repeated line would favour the text
    known = base_counts(base)
    win = heldout_windows(held, base.lut, base.order)
    lp_base = window_logprobs(base, win)
    ppl_base = math.exp(-float(lp_base.mean())) if lp_base.size else float("nan")
    with tempfile.TemporaryDirectory(prefix="csc-adapt-") as tmp:
        lam, ppl_text, ppl_mixed = float(weight or 0.0), float("nan"), float("nan")
        if weight is None or without is not None:
            log(f"the text's model without its {len(held):,} held-out lines")
            t, counts = text_tables(train, base, prune)
            write_tables(Path(tmp) / "without", t, base, counts, quant=0)
            text_lm = CharLM.load(Path(tmp) / "without")
            lp_text = window_logprobs(text_lm, win)
            if weight is None:
                lam = min(best_weight(lp_text, lp_base), MAX_WEIGHT)
            if lp_text.size:
                ppl_text, ppl_mixed = math.exp(-float(lp_text.mean())), mixed_perplexity(lp_text, lp_base, lam)
            if without is not None:
                mixed = mix_tables(base, text_lm, t, lam)
                write_tables(without, mixed, base, known + counts, quant=_quant(base))
        log(f"weight of the text's model: {lam:.3f} (held-out perplexity: base {ppl_base:.1f}, the text's model "
            f"{ppl_text:.1f}, interpolated {ppl_mixed:.1f})")
        log(f"the text's model over all {len(lines):,} lines, interpolated")
        t, counts = text_tables(lines, base, prune)
        write_tables(Path(tmp) / "text", t, base, counts, quant=0)
        mixed = mix_tables(base, CharLM.load(Path(tmp) / "text"), t, lam)
    meta = write_tables(out, mixed, base, known + counts, quant=_quant(base))
    facts = {
        "weight": round(lam, 4),
        "prune": list(prune),
        "lines": len(lines),
        "held_out_lines": len(held),
        "heldout_perplexity_base": round(ppl_base, 3),
        "heldout_perplexity_text_model": round(ppl_text, 3),
        "heldout_perplexity_interpolated": round(ppl_mixed, 3),
        "ngrams_added": [int(a) - int(b) for a, b in zip(meta["ngrams"], base.meta["ngrams"])],
    }
    meta.update({k: base.meta[k] for k in ("smoothing", "prune", "heldout_perplexity", "in_domain", "corpus_files",
                                           "quant_bits") if k in base.meta})
    meta["adapted"] = facts
    meta["size_bytes"] = CharLM.load(out).size_bytes()
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return facts


def split(lines: Sequence[str], every: int) -> tuple[list[str], list[str]]:
    """(the lines counted, every ``every``-th line held out); none held out when ``every`` <= 0."""
    if every <= 0:
        return list(lines), []
    return [x for i, x in enumerate(lines) if (i + 1) % every], list(lines[every - 1::every])


def _quant(lm: CharLMBase) -> int:
    """The base LM's quantisation (its bits; 0: unquantised), kept by the adapted LM."""
    return int(lm.meta.get("quant_bits", 8))
