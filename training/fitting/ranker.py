"""Fit the decoder's ranker on real training pairs, choose its threshold on the dev split.

    python -m training.fitting.ranker --model runs/bundle --data ../shared/data --out runs/bundle/ranker.json

1. The shortlist: a conditional logit over the cheap features of every candidate of the erroneous
   characters, so that the gold correction survives the cut to ``--shortlist`` candidates.
2. The ranker: a conditional logit over every feature of each site's choices (keep the character or
   take a shortlisted candidate), fitted twice, with and without the LM features (``--no-lm``).
3. The threshold: the probability above which an edit is applied, chosen on the dev split for the
   best sentence-level correction F1 with at most ``--max-fpr`` of the error-free dev sentences changed.

Training pairs are ``training.data.splits.train_pairs`` (never the dev split or a test set). The counts of the
real pairs a training row reads (confusions, error_rate, seen, kept_word) must not hold that pair itself: by
default they are counted without it (leave-one-out); with ``--fit-count-folds`` each fold of the pairs, and of
the dev split, reads a candidate table that never counted its fold (``training.evidence.candidates --folds``), so an
essay's other sentences are not counted either, and no row's counts depend on its own label. Fitting uses torch
(L-BFGS); the bundle gets plain named weights.

One module though over 500 lines: the three steps share the rows (``Table``) and one command's settings; the
threshold sweep (``sweep``, ``choose_threshold``, ``summarise``) that threshold, pair_veto and evaluate import is
the seam to split along if it grows.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from corrector import Corrector
from corrector.evidence.kept_forms import WORD_WINDOWS, kept_word_value
from corrector.features import CHEAP, COL, FEATURES, RATE_A, RATE_B
from corrector.rank import IDENTITY, RankerWeights, Scorer
from corrector.stages import Chunk, assemble

from ..data.csc_data import read_pairs
from ..data.splits import dev_pairs, train_pairs
from .calibration_map import fit_calibration, reliability_table
from .crossfit import Folds
from .metrics import csc_metrics


@dataclass
class Table:
    """Feature rows of many sites with their labels: ``site`` groups rows, ``label`` marks the gold choice."""

    X: np.ndarray
    site: np.ndarray
    label: np.ndarray
    erroneous: np.ndarray  # per site: the gold differs from the character written
    reachable: np.ndarray  # per site: the gold is among the rows

    @staticmethod
    def concat(parts: list[Table]) -> Table:
        offset, sites = 0, []
        for p in parts:
            sites.append(p.site + offset)
            offset += len(p.erroneous)
        return Table(np.concatenate([p.X for p in parts]), np.concatenate(sites),
                     np.concatenate([p.label for p in parts]), np.concatenate([p.erroneous for p in parts]),
                     np.concatenate([p.reachable for p in parts]))

    def subset(self, keep_sites: np.ndarray) -> Table:
        """The rows of the sites where ``keep_sites`` is true, sites renumbered."""
        new_id = np.cumsum(keep_sites) - 1
        r = keep_sites[self.site]
        return Table(self.X[r], new_id[self.site[r]], self.label[r], self.erroneous[keep_sites],
                     self.reachable[keep_sites])


def _gold(pairs: list[tuple[str, str]], batch, sites) -> list[str]:
    return [pairs[batch[c].text_index][1][batch[c].start + i] for c, i in zip(sites.chunk, sites.char)]


def _leave_one_out(X: np.ndarray, label: np.ndarray) -> None:
    """This pair's own error is not evidence for itself: one count less on its gold row."""
    own = label & (X[:, COL["keep"]] == 0)
    count = np.expm1(X[own, COL["confusions"]])
    X[own, COL["confusions"]] = np.log1p(np.maximum(count - 1, 0))
    # error_rate = log((count + a) / (written + b)): one error and one writing fewer
    ratio = np.exp(X[own, COL["error_rate"]])
    written = (count + RATE_A) / ratio - RATE_B
    X[own, COL["error_rate"]] = np.log((np.maximum(count - 1, 0) + RATE_A) / (np.maximum(written - 1, 0) + RATE_B))


def _seen_leave_one_out(fix: Corrector, rows, sites, batch: Sequence[Chunk], pairs: list[tuple[str, str]]) -> None:
    """``seen`` and ``seen_max`` without the pair's own correctly written bigrams (the table counted them too)."""
    if not fix.evidence.kept.has_bigrams or not len(sites):
        return
    from ..evidence.candidates import correct_bigrams

    texts = [c.text for c in batch]
    own = [correct_bigrams([pairs[c.text_index]]) for c in batch]
    left, right = fix.evidence.seen_counts(sites, texts)
    for k, (c, i) in enumerate(zip(sites.chunk.tolist(), sites.char.tolist())):
        if left[k] > 0:
            left[k] = max(left[k] - own[c][texts[c][i - 1 : i + 1]], 0)
        if right[k] > 0:
            right[k] = max(right[k] - own[c][texts[c][i : i + 2]], 0)
    fix.evidence.set_seen(rows.X, rows.X[:, COL["keep"]] == 1, rows.site, left, right)


def _kept_word_leave_one_out(fix: Corrector, rows, sites, batch: Sequence[Chunk], pairs: list[tuple[str, str]]) -> None:
    """``kept_word`` without the pair's own words (the table counted them too)."""
    ev = fix.evidence
    if not ev.kept.has_words or not len(sites):
        return
    from ..evidence.candidates import word_counts

    texts = [c.text for c in batch]
    own = [word_counts([pairs[c.text_index]]) for c in batch]  # the whole pair's, whichever chunk holds the word
    kept, changed = ev.word_counts(sites, texts)
    for k, (c, i) in enumerate(zip(sites.chunk.tolist(), sites.char.tolist())):
        own_kept, own_changed = own[c]
        for j, (a, n) in enumerate(WORD_WINDOWS):
            if kept[k, j] + changed[k, j] > 0:
                w = texts[c][i + a : i + a + n]
                kept[k, j] = max(kept[k, j] - own_kept[w], 0)
                changed[k, j] = max(changed[k, j] - own_changed[w], 0)
    is_keep = rows.X[:, COL["keep"]] == 1
    rows.X[:, COL["kept_word"]] = np.where(is_keep, kept_word_value(kept, changed)[rows.site], 0.0)


def extract_cheap(fix: Corrector, pairs: list[tuple[str, str]], leave_one_out: bool = True,
                  batch_texts: int = 256) -> Table:
    """Every candidate of every erroneous character with the cheap (shortlist) features only; one row
    per candidate, no keep rows. What the shortlist's weights are fitted on. ``leave_one_out``: the pairs
    were counted in ``fix``'s candidate table (training pairs, without cross-fitted tables)."""
    ev = fix.evidence
    parts = []
    for b in range(0, len(pairs), batch_texts):
        part = pairs[b : b + batch_texts]
        prepared = fix.prepare([s for s, _ in part], protect_dictionary_words=False)
        cfg = prepared.settings
        for batch in prepared.batches:
            sites = fix.sites(batch)
            gold = _gold(part, batch, sites)
            err = np.array([g != s for g, s in zip(gold, sites.src)], dtype=bool)
            if not err.any():
                continue
            sites = sites.take(err)
            gold = [g for g, e in zip(gold, err) if e]
            site, vid, static, _ = ev.shortlist(sites, {}, 1_000_000, cfg.top_k, {})
            X = np.zeros((len(site), len(FEATURES)), dtype=np.float32)
            for name, col in ev.static_features(sites, site, vid, static).items():
                X[:, COL[name]] = col
            label = np.array([fix.vocab[v] == gold[s] for s, v in zip(site.tolist(), vid.tolist())], dtype=bool)
            if leave_one_out:
                _leave_one_out(X, label)
            reach = np.zeros(len(sites), bool)
            reach[site[label]] = True
            parts.append(Table(X, site, label, np.ones(len(sites), bool), reach))
    return Table.concat(parts)


def extract(fix: Corrector, pairs: list[tuple[str, str]], shortlist: int, leave_one_out: bool = True,
            batch_texts: int = 256) -> Table:
    """Rows for every site of the pairs' sources, as the Corrector scores them in its first round."""
    parts = []
    for b in range(0, len(pairs), batch_texts):
        part = pairs[b : b + batch_texts]
        prepared = fix.prepare([s for s, _ in part], shortlist=shortlist, protect_dictionary_words=False)
        for scored in fix.score(prepared, word_pairs=True):  # whatever the bundle's ranker weighs
            batch, sites = scored.chunks, scored.sites
            rows = replace(scored.rows, X=scored.rows.X.copy())  # the leave-one-out counts change it
            gold = _gold(part, batch, sites)
            err = np.array([g != s for g, s in zip(gold, sites.src)], dtype=bool)
            label = np.array([fix.vocab[v] == gold[s] for s, v in zip(rows.site.tolist(), rows.vid.tolist())],
                             dtype=bool)
            if leave_one_out:
                _leave_one_out(rows.X, label)
                _seen_leave_one_out(fix, rows, sites, batch, part)
                _kept_word_leave_one_out(fix, rows, sites, batch, part)
            reach = np.zeros(len(sites), bool)
            reach[rows.site[label]] = True
            parts.append(Table(rows.X, rows.site, label, err, reach))
    return Table.concat(parts)


def fit_conditional_logit(t: Table, features: list[str], hidden: int = 0, l2: float = 1e-3, iters: int = 300,
                          seed: int = 0) -> Scorer:
    """Maximum-likelihood scorer of P(row | site) = softmax over the site's rows of score(x), on the
    sites whose gold is among their rows; ``hidden`` tanh units on top of the linear part (0: plain
    conditional logit). Inputs are standardised for the fit and the scaling folded back into the
    named weights."""
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)  # small matrices: one thread is as fast, and never waits on a busy core
    t = t.subset(t.reachable)
    raw = np.stack([_column(t.X, f) for f in features], axis=1).astype(np.float64)
    mu, sd = raw.mean(0), raw.std(0)
    sd[sd < 1e-6] = 1.0
    X = torch.tensor((raw - mu) / sd, dtype=torch.float64)
    site = torch.tensor(t.site, dtype=torch.long)
    n = int(site.max()) + 1
    label_rows = torch.tensor(np.flatnonzero(t.label), dtype=torch.long)
    label_sites = site[label_rows]
    d = len(features)
    w = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    U = (0.3 * torch.randn(d, hidden, dtype=torch.float64)).requires_grad_()
    c = torch.zeros(hidden, dtype=torch.float64, requires_grad=True)
    v = (0.1 * torch.randn(hidden, dtype=torch.float64)).requires_grad_()
    params = [w, U, c, v] if hidden else [w]
    opt = torch.optim.LBFGS(params, lr=1, max_iter=iters, history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        s = X @ w
        if hidden:
            s = s + torch.tanh(X @ U + c) @ v
        m = torch.full((n,), -1e30, dtype=torch.float64).scatter_reduce(0, site, s, "amax")
        z = torch.zeros(n, dtype=torch.float64).index_add(0, site, torch.exp(s - m[site]))
        nll = (m + torch.log(z))[label_sites].mean() - s[label_rows].mean()
        loss = nll + l2 * sum((p * p).sum() for p in params)
        loss.backward()
        return loss

    opt.step(closure)
    # x_std = (x - mu) / sd: per-row constants cancel in the softmax, so the linear part needs no bias
    wn = w.detach().numpy() / sd
    linear = {f: round(float(x), 6) for f, x in zip(features, wn)}
    if not hidden:
        return Scorer(linear)
    Un = U.detach().numpy() / sd[:, None]
    cn = c.detach().numpy() - (mu / sd) @ U.detach().numpy()
    return Scorer(linear, {f: [round(float(x), 6) for x in Un[i]] for i, f in enumerate(features)},
                  [round(float(x), 6) for x in cn], [round(float(x), 6) for x in v.detach().numpy()])


PRODUCTS = ("lm_gain*pinyin", "lm_gain*shape", "lm_gain*rtd", "lm_gain*word", "lm_gain*error_rate", "gen_lp*rtd",
            "pinyin*shape", "rtd*pinyin", "rtd*error_rate")


def _column(X: np.ndarray, name: str) -> np.ndarray:
    """A feature's column, or the product of two for "a*b"."""
    if "*" in name:
        a, b = name.split("*")
        return X[:, COL[a]] * X[:, COL[b]]
    return X[:, COL[name]]


# the blocks of weights that fit_blend rescales, by the features a weight's name holds (a weight goes to the first
# block that names one of its features; those of no block, the counts, similarity and the rest, to "rest")
BLEND_BLOCKS = {"networks": ("gen_lp", "rtd"), "lm": ("lm_gain",)}


def blend_block(name: str, blocks: tuple[str, ...]) -> str:
    parts = name.split("*")
    return next((b for b in blocks if any(f in parts for f in BLEND_BLOCKS[b])), "rest")


def fit_blend(dev: Table, scorer: Scorer, blocks: tuple[str, ...] = ("networks",)) -> dict[str, float]:
    """A factor per block of a scorer's weights (``blocks`` of BLEND_BLOCKS, then "rest"), fitted on dev rows.

    The networks are fine-tuned on the real training pairs the scorer is fitted on (each seen several times), so
    on its rows their features are more reliable than on text they never saw (the fine-tuning's proxy F1 was 0.63
    on 1,000 training pairs against 0.32 on the dev split, 2026-11-26), and the fit leans on them too much. Each
    block's score becomes one feature of a conditional logit on the dev split's rows, whose weights rescale the
    blocks: a stacking step of two or three parameters (the threshold and calibration are chosen on dev too)."""
    if scorer.hidden:
        raise ValueError("the blend rescales a linear scorer's weights; this one has hidden units")
    names = (*blocks, "rest")
    X = np.zeros_like(dev.X)
    slots = ["gen_lp", "keep", "rtd"][: len(names)]  # each block's score stands in one column of a feature table
    for block, slot in zip(names, slots):
        X[:, COL[slot]] = Scorer({n: w for n, w in scorer.linear.items() if blend_block(n, blocks) == block}).score(dev.X)
    fitted = fit_conditional_logit(replace(dev, X=X), slots).linear
    return {block: float(fitted[slot]) for block, slot in zip(names, slots)}


def blended(scorer: Scorer, factors: dict[str, float]) -> Scorer:
    blocks = tuple(b for b in factors if b != "rest")
    return replace(scorer, linear={n: w * factors[blend_block(n, blocks)] for n, w in scorer.linear.items()})


def shortlist_recall(t: Table, weights: dict[str, float], sizes: list[int]) -> dict[int, float]:
    """Share of erroneous sites whose gold is among the ``size`` best candidates by the cheap score."""
    err = t.erroneous
    cand = t.X[:, COL["keep"]] == 0
    score = np.zeros(len(t.X))
    for f in CHEAP:
        score += weights.get(f, 0.0) * t.X[:, COL[f]]
    gold_score = np.full(len(err), -np.inf)
    gold_rows = np.flatnonzero(t.label & cand)
    gold_score[t.site[gold_rows]] = score[gold_rows]
    better = np.zeros(len(err), dtype=np.int64)
    np.add.at(better, t.site[cand], score[cand] > gold_score[t.site[cand]])
    return {k: round(float(((better < k) & np.isfinite(gold_score))[err].mean()), 4) for k in sizes}


def sweep(fix: Corrector | Folds, pairs: list[tuple[str, str]], thresholds: list[float], **settings) -> list[dict]:
    """SIGHAN metrics of the decoding at each threshold; the networks and features are computed once. With
    ``Folds``, each fold's pairs are decoded by its own Corrector and the metrics pooled."""
    per_pair = _as_folds(fix).map(pairs, lambda f, ps: list(zip(*_predictions(f, ps, thresholds, **settings))))
    return [{"threshold": th, **csc_metrics((s, t, p[j]) for (s, t), p in zip(pairs, per_pair))}
            for j, th in enumerate(thresholds)]


def _as_folds(fix: Corrector | Folds) -> Folds:
    return fix if isinstance(fix, Folds) else Folds([fix])


def _predictions(fix: Corrector, pairs: list[tuple[str, str]], thresholds: list[float], **settings) -> list[list[str]]:
    """The corrected texts at each threshold (one list per threshold)."""
    prepared = fix.prepare([s for s, _ in pairs], **settings)
    # the decisions need no generator distribution (its features are in the rows): drop it, it is large
    scored = [s.without_logits() for s in fix.score(prepared)]
    out = []
    for th in thresholds:
        cfg = prepared.settings.with_overrides(threshold=th)
        out.append([c.target for c in assemble(prepared, [fix.decide(s, cfg) for s in scored])])
    return out


def choose_threshold(rows: list[dict], max_fpr: float) -> dict:
    ok = [r for r in rows if r["false_positive_rate"] <= max_fpr] or rows
    return max(ok, key=lambda r: (r["sentence_correction"]["f1"], r["threshold"]))


def dev_edits(fix: Corrector | Folds, pairs: list[tuple[str, str]], **settings) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, right) of every edit applied on the pairs at threshold 0.05."""
    results = _as_folds(fix).map(pairs, lambda f, ps: f.correct_batch([s for s, _ in ps], threshold=0.05, **settings))
    conf, right = [], []
    for (_, t), r in zip(pairs, results):
        for e in r.edits:
            conf.append(e.confidence)
            right.append(t[e.position] == e.target)
    return np.array(conf, dtype=np.float64), np.array(right, dtype=np.float64)


def fit_isotonic(p: np.ndarray, right: np.ndarray, min_block: int = 1) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Knots (probabilities, confidences) of the isotonic regression of ``right`` on ``p`` (pool adjacent
    violators): one knot per pooled block, at its mean probability and its share right, so both rows strictly
    increase; (0, 0) in front when the lowest block is sometimes right. Fewer than two knots: the identity.
    A block of fewer than ``min_block`` edits is pooled with the neighbour whose share is closer (a handful of
    edits that happened to be right must not earn confidence 1.0)."""
    order = np.argsort(p, kind="stable")
    p, y = np.asarray(p, np.float64)[order], np.asarray(right, np.float64)[order]
    _, start = np.unique(p, return_index=True)  # equal probabilities start in one block
    blocks: list[list[float]] = []  # [count, sum of p, sum right]
    for n, sp, sy in zip(np.diff(np.append(start, len(p))), np.add.reduceat(p, start), np.add.reduceat(y, start)):
        blocks.append([float(n), float(sp), float(sy)])
        while len(blocks) > 1 and blocks[-2][2] / blocks[-2][0] >= blocks[-1][2] / blocks[-1][0]:
            last = blocks.pop()
            blocks[-1] = [u + v for u, v in zip(blocks[-1], last)]
    while len(blocks) > 1 and min(b[0] for b in blocks) < min_block:
        i = min(range(len(blocks)), key=lambda k: (blocks[k][0], k))
        rate = blocks[i][2] / blocks[i][0]
        j = i - 1 if i == len(blocks) - 1 or (i > 0 and rate - blocks[i - 1][2] / blocks[i - 1][0]
                                                <= blocks[i + 1][2] / blocks[i + 1][0] - rate) else i + 1
        lo, hi = min(i, j), max(i, j)  # pooling two neighbours of a monotone sequence keeps it monotone
        blocks[lo : hi + 1] = [[u + v for u, v in zip(blocks[lo], blocks[hi])]]
    knots = [(0.0, 0.0)] if blocks and blocks[0][2] > 0 else []
    for n, sp, sy in blocks:
        x, c = round(sp / n, 6), round(sy / n, 6)
        if not knots or (x > knots[-1][0] and c > knots[-1][1]):  # rounding may merge two knots
            knots.append((x, c))
    if len(knots) < 2:
        return IDENTITY
    xs, ys = zip(*knots)
    return tuple(xs), tuple(ys)


def choose_min_block(p: np.ndarray, right: np.ndarray, sizes: tuple[int, ...] = (1, 10, 25, 50, 100),
                     seed: int = 0) -> int:
    """The ``min_block`` of :func:`fit_isotonic` with the lowest Brier score in two-fold cross-fitting
    (fit on one random half of the edits, score the other, and the other way round)."""
    p, right = np.asarray(p, np.float64), np.asarray(right, np.float64)
    half = np.random.default_rng(seed).permutation(len(p)) % 2 == 0
    best, best_size = np.inf, sizes[0]
    for size in sizes:
        err = 0.0
        for fit in (half, ~half):
            xs, ys = fit_isotonic(p[fit], right[fit], size)
            err += float(((np.interp(p[~fit], xs, ys) - right[~fit]) ** 2).sum())
        if err < best - 1e-12:
            best, best_size = err, size
    return best_size


def reliability(fix: Corrector | Folds, pairs: list[tuple[str, str]], png: Path | None, bins: int = 10) -> list[dict]:
    """Applied edits on the pairs at threshold 0.05, bucketed by confidence: mean confidence vs share correct."""
    table, _ = reliability_table(*dev_edits(fix, pairs), bins)
    if png is not None and table:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(4, 4))
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.plot([r["mean_confidence"] for r in table], [r["share_correct"] for r in table], "o-")
        for r in table:
            ax.annotate(str(r["edits"]), (r["mean_confidence"], r["share_correct"]), fontsize=7)
        ax.set_xlabel("edit confidence (mean in bin)")
        ax.set_ylabel("share of edits that are right")
        ax.set_title("reliability on the dev split")
        fig.tight_layout()
        fig.savefig(png, dpi=120)
    return table


def save_table(t: Table, path: Path) -> None:
    np.savez(path, X=t.X, site=t.site, label=t.label, erroneous=t.erroneous, reachable=t.reachable)


def load_table(path: Path) -> Table:
    z = np.load(path)
    return Table(z["X"], z["site"], z["label"], z["erroneous"], z["reachable"])


def summarise(rows: list[dict]) -> list[dict]:
    return [{"threshold": r["threshold"], "f1": r["sentence_correction"]["f1"],
             "p": r["sentence_correction"]["precision"], "r": r["sentence_correction"]["recall"],
             "fpr": r["false_positive_rate"]} for r in rows]


def _lm_summary(lm: Path, folds: int = 0) -> dict:
    """What the training rows' LM was (no path): its order, pruning and in-domain lines, from its meta.json
    (fold0's for cross-fitting folds)."""
    meta_file = (lm / "fold0" if folds else lm) / "meta.json"
    meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
    return {"name": lm.name, "folds": folds, **{k: meta.get(k) for k in ("order", "smoothing", "prune", "in_domain")}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="bundle with candidates/ and lm/ (ranker.json is written)")
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (holds csc/)")
    ap.add_argument("--out", type=Path, help="where ranker.json goes (default: the bundle)")
    ap.add_argument("--shortlist", type=int, default=16, help="candidates per character in the training rows")
    ap.add_argument("--try-shortlists", default="8,16", help="shortlist sizes tried on dev (<= --shortlist)")
    ap.add_argument("--hidden", default="0", help="hidden-layer sizes to try (0 = linear); the best on dev is kept")
    ap.add_argument("--products", default="none," + ",".join(PRODUCTS),
                    help="products of two features added to the linear part: 'none' and/or a comma list of a*b; "
                         "each of the two variants is tried on dev")
    ap.add_argument("--max-fpr", type=float, default=0.08, help="most error-free dev sentences changed")
    ap.add_argument("--limit", type=int, default=0, help="use only this many training pairs (quick runs)")
    ap.add_argument("--holdout", type=int, default=1000, help="sighan_train pairs held out as the dev split "
                    "(as training.data.make_csc_data --holdout, same seed)")
    ap.add_argument("--fit-lm", type=Path, help="character LM the training rows are scored with (default: the "
                    "bundle's); give one built without --in-domain when the bundle's LM counted the training pairs' "
                    "targets, so that a pair's own text is no evidence for itself. Dev always uses the bundle's")
    ap.add_argument("--fit-lm-folds", type=Path, help="cross-fitting LM folds (training.evidence.char_lm --in-domain-folds K "
                    "--fold-out DIR): each training pair and each dev pair is scored with the LM that did not count "
                    "its fold (training.fitting.crossfit); the bundle's LM counted them all")
    ap.add_argument("--fit-count-folds", type=Path, help="cross-fitting candidate tables (training.evidence.candidates "
                    "--folds K, the same K as --fit-lm-folds): each training pair and each dev pair reads the counts "
                    "of the real pairs less its fold's, instead of leave-one-out counts")
    ap.add_argument("--blend-on-dev", nargs="?", const="networks", default="",
                    help="rescale blocks of weights (networks, or networks,lm; the rest is one more) by factors fitted "
                         "on the dev split's rows (for networks fine-tuned on the ranker's training pairs: fit_blend)")
    ap.add_argument("--train-pairs", type=Path, help="fit on these source<TAB>target pairs instead of all the real "
                    "training pairs (e.g. a fold the networks were not fine-tuned on: training.data.splits --hold-out-fold)")
    ap.add_argument("--synthetic-pairs", type=Path, help="more source<TAB>target pairs to fit on beside the real "
                    "ones, drawn the way native writers slip (training.data.make_csc_data on sentences the networks were "
                    "not fine-tuned on): their confusions are not in the candidate table's counts, so their rows "
                    "are not counted leave-one-out")
    ap.add_argument("--cache", type=Path, help="folder for the extracted feature tables (reused when present)")
    ap.add_argument("--report", type=Path, help="JSON report (recall, weights, sweep, reliability)")
    ap.add_argument("--plot", type=Path, help="reliability plot PNG")
    ap.add_argument("--reliability-only", action="store_true",
                    help="only print the bundle's reliability table on dev (and draw --plot); with "
                    "--fit-lm-folds or --fit-count-folds, dev is scored with the folds (cross-fitted, as the calibration "
                    "was fitted)")
    ap.add_argument("--pairs", type=Path, help="with --reliability-only: a source<TAB>target file to use instead "
                    "of dev (an out-of-sample check of the calibration, which is fitted on dev)")
    a = ap.parse_args(argv)
    if a.fit_lm and a.fit_lm_folds:
        ap.error("give --fit-lm or --fit-lm-folds, not both")
    t0 = time.time()
    if a.reliability_only:
        pairs = read_pairs(a.pairs) if a.pairs else dev_pairs(a.data, a.holdout)
        bundle_fix = Corrector.load(a.model, device="cpu")  # with --fit-lm-folds: dev scored as the calibration saw it
        crossfit = (a.fit_lm_folds or a.fit_count_folds) and not a.pairs
        scorer = Folds.over(bundle_fix, a.fit_lm_folds, a.data, a.fit_count_folds) if crossfit else bundle_fix
        for row in reliability(scorer, pairs, a.plot):
            print(json.dumps(row))
        return
    fix = Corrector.load(a.model, device="cpu", threshold=1.0)
    if a.fit_lm_folds or a.fit_count_folds:  # rows and dev both cross-fitted
        fit = dev_fix = Folds.over(fix, a.fit_lm_folds, a.data, a.fit_count_folds)
        if a.fit_lm:
            fit = Folds.over(fix.with_lm(a.fit_lm), None, a.data, a.fit_count_folds)
    else:
        fit = Folds([fix.with_lm(a.fit_lm) if a.fit_lm else fix])
        dev_fix = Folds([fix])
    everyone = Folds(list({id(f): f for f in [fix, *fit.fixes, *dev_fix.fixes]}.values()))  # each one once
    train = read_pairs(a.train_pairs) if a.train_pairs else train_pairs(a.data, a.holdout)
    if a.limit:
        train = train[: a.limit]
    dev = dev_pairs(a.data, a.holdout)
    loo = a.fit_count_folds is None  # the rows' counts: leave-one-out, or cross-fitted tables
    report: dict = {"train_pairs": len(train), "dev_pairs": len(dev), "shortlist": a.shortlist,
                    "row_counts": "leave-one-out" if loo else "cross-fitted folds"}
    tag = "" if loo else "_cf"  # cached tables of the two kinds never mix

    def cached(name: str, make) -> Table:
        path = a.cache / f"{name}.npz" if a.cache else None
        if path is not None and path.exists():
            return load_table(path)
        t = make()
        if path is not None:
            a.cache.mkdir(parents=True, exist_ok=True)
            save_table(t, path)
        return t

    # 1. shortlist weights, on every candidate of the erroneous characters
    synthetic = read_pairs(a.synthetic_pairs) if a.synthetic_pairs else []
    report["synthetic_pairs"] = len(synthetic)
    full = cached(f"train_cheap{tag}", lambda: Table.concat(
        [extract_cheap(f, ps, leave_one_out=loo) for f, ps in fit.groups(train)]
        + [extract_cheap(f, ps, leave_one_out=False) for f, ps in fit.groups(synthetic)]))  # no LM feature here
    short_w = fit_conditional_logit(full, list(CHEAP)).linear
    report["shortlist_weights"] = short_w
    report["candidate_recall_train"] = round(float(full.reachable.mean()), 4)
    report["shortlist_recall_train"] = shortlist_recall(full, short_w, [1, 4, 8, 16, 32])
    dev_full = Table.concat([extract_cheap(f, ps, leave_one_out=False) for f, ps in dev_fix.groups(dev)])
    report["candidate_recall_dev"] = round(float(dev_full.reachable.mean()), 4)
    report["shortlist_recall_dev"] = shortlist_recall(dev_full, short_w, [1, 4, 8, 16, 32])
    print(f"shortlist weights {short_w}; candidate recall dev {report['candidate_recall_dev']}, after the "
          f"shortlist {report['shortlist_recall_dev']} ({time.time() - t0:.0f} s)", flush=True)
    everyone.set(ranker=replace(fix.ranker, shortlist=short_w))

    # 2. the ranker, with and without the LM, for each hidden size; 3. thresholds on dev
    rows = cached(f"train_rows_s{a.shortlist}{tag}", lambda: Table.concat(
        [extract(f, ps, shortlist=a.shortlist, leave_one_out=loo) for f, ps in fit.groups(train)]
        + [extract(f, ps, shortlist=a.shortlist, leave_one_out=False) for f, ps in fit.groups(synthetic)]))
    print(f"{len(rows.X):,} training rows ({time.time() - t0:.0f} s)", flush=True)
    grid = [round(0.3 + 0.05 * i, 2) for i in range(13)]  # 0.3 ... 0.9
    best: dict | None = None
    parts = [p for p in a.products.split(",") if p]
    named = [p for p in parts if p != "none"]
    product_sets = ([[]] if "none" in parts or not named else []) + ([named] if named else [])
    variants = [(h, ps) for h in [int(x) for x in a.hidden.split(",")] for ps in product_sets if not (h and ps)]
    dev_rows = Table.concat([extract(f, ps, shortlist=a.shortlist, leave_one_out=False)
                             for f, ps in dev_fix.groups(dev)]) if a.blend_on_dev else None
    for h, ps in variants:
        with_lm = fit_conditional_logit(rows, list(FEATURES) + ps, hidden=h)
        no_lm = fit_conditional_logit(rows, [f for f in FEATURES if f != "lm_gain"]
                                      + [p for p in ps if "lm_gain" not in p], hidden=h)
        if dev_rows is not None:
            no_lm_rows = replace(dev_rows, X=dev_rows.X.copy())
            no_lm_rows.X[:, COL["lm_gain"]] = 0.0  # as the no-LM decoding scores them
            blocks = tuple(a.blend_on_dev.split(","))
            factors = {"with_lm": fit_blend(dev_rows, with_lm, blocks),
                       "no_lm": fit_blend(no_lm_rows, no_lm, tuple(b for b in blocks if b != "lm"))}
            with_lm, no_lm = blended(with_lm, factors["with_lm"]), blended(no_lm, factors["no_lm"])
            report.setdefault("blend", []).append({"hidden": h, "products": ps, **factors})
            print(f"blend on dev (networks, rest): with the LM {factors['with_lm']}, without {factors['no_lm']}",
                  flush=True)
        everyone.set(ranker=RankerWeights(with_lm, no_lm, short_w, 0.5, 0.5, {}))
        for k in [int(x) for x in a.try_shortlists.split(",")]:
            trial: dict = {"hidden": h, "products": ps, "shortlist": k, "with_lm": with_lm, "no_lm": no_lm}
            for name, use_lm in (("lm", True), ("no_lm", False)):
                table = sweep(dev_fix, dev, grid, use_lm=use_lm, shortlist=k)
                trial[f"threshold_{name}"] = choose_threshold(table, a.max_fpr)["threshold"]
                trial[f"dev_{name}"] = summarise(table)
                print(f"hidden {h}, products {len(ps)}, shortlist {k}, dev {name}: " + "  ".join(
                    f"{r['threshold']}:{r['f1']:.3f}/{r['fpr']:.3f}" for r in trial[f"dev_{name}"])
                    + f" ({time.time() - t0:.0f} s)", flush=True)
            trial["dev_f1"] = max(r["f1"] for r in trial["dev_lm"] if r["threshold"] == trial["threshold_lm"])
            report.setdefault("trials", []).append({k: v for k, v in trial.items() if k not in ("with_lm", "no_lm")})
            if best is None or trial["dev_f1"] > best["dev_f1"]:
                best = trial
    assert best is not None
    everyone.set(ranker=RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"],
                                      best["threshold_no_lm"]),
                 config=fix.config.with_overrides(shortlist=best["shortlist"]))
    # 4. calibration: a logistic map of each scorer's edit probabilities on the dev edits (strictly increasing
    # from 0 to 1: calibration_map); the thresholds (chosen on the probabilities) move with it, the same edits made
    for key, use_lm in (("with_lm", True), ("no_lm", False)):
        p, right = dev_edits(dev_fix, dev, use_lm=use_lm)
        try:
            cal, params = fit_calibration(p, right)
        except ValueError as e:  # too few or one-sided edits: confidences stay the probabilities
            cal, params = IDENTITY, {"form": "identity", "why": str(e)}
        best[key] = replace(best[key], calibration=cal)
        report[f"calibration_{key}"] = params
        th = "threshold_lm" if use_lm else "threshold_no_lm"
        best[th] = float(best[key].calibrate(best[th]))
    print(f"calibration: logistic, with the LM {report['calibration_with_lm']}, without {report['calibration_no_lm']}",
          flush=True)
    everyone.set(ranker=RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"],
                                      best["threshold_no_lm"]))
    report["reliability_dev"] = reliability(dev_fix, dev, a.plot)
    meta = {"fitted": True, "train_pairs": len(train), "synthetic_pairs": len(synthetic), "shortlist": best["shortlist"], "hidden": best["hidden"],
            "products": best["products"],
            **({"blend_on_dev": report["blend"]} if a.blend_on_dev else {}),
            "threshold_chosen_on": "dev split", "max_fpr": a.max_fpr,
            "rows_lm": _lm_summary(a.fit_lm_folds, folds=len(fit.fixes)) if a.fit_lm_folds else
            _lm_summary(a.fit_lm) if a.fit_lm else "the bundle's",
            "dev_lm": "cross-fitted folds (as the rows)" if a.fit_lm_folds else "the bundle's",
            "row_counts": report["row_counts"],
            "dev_counts": "the bundle's" if loo else "cross-fitted folds (as the rows)",
            "candidate_recall_dev": report["candidate_recall_dev"], "seconds": round(time.time() - t0)}
    weights = RankerWeights(best["with_lm"], best["no_lm"], short_w, best["threshold_lm"], best["threshold_no_lm"], meta)
    out = a.out or a.model / "ranker.json"
    out.write_text(json.dumps(weights.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    if a.report:
        a.report.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"hidden {best['hidden']}, shortlist {best['shortlist']}, threshold {best['threshold_lm']} (no LM {best['threshold_no_lm']}) "
          f"→ {out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
