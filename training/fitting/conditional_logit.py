"""Fitting a scorer on a feature table: the conditional logit (``fit_conditional_logit``, optionally with a hidden
layer and products of two features, "a*b"), the blend that rescales blocks of a fitted scorer's weights on the dev
split (``fit_blend``, ``blended``), and the shortlist's recall of the gold candidate (``shortlist_recall``).
Fitting uses torch (L-BFGS); the scorer gets plain named weights."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from corrector.features import CHEAP, COL
from corrector.rank import Scorer

from .table import Table


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
    sw = None if t.weight is None else torch.tensor(t.weight, dtype=torch.float64)[label_sites]  # Table.thinned
    if sw is not None:
        sw = sw / sw.mean()
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
        nll = ((m + torch.log(z))[label_sites].mean() - s[label_rows].mean() if sw is None
               else (sw * ((m + torch.log(z))[label_sites] - s[label_rows])).mean())
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

