"""The map from the ranker's probability to an edit's confidence: logistic in the probability's log-odds.

An isotonic map (``fit_isotonic``, kept for benchmarks/calibration_lodo.py's comparison) is flat between and
beyond its pooled blocks: every edit above the last block's mean probability gets that block's share right (0.84
in the bundle of 2026-11-27), so a near-certain edit and a borderline one tie, and a threshold above the top
confidence silently makes no edit. The logistic map

    confidence = sigmoid(a * logit(p) + b),  a > 0

is strictly increasing on [0, 1] and runs from 0 to 1, so it keeps the ranker's order all the way up (ties only
where the probabilities tie), while its two parameters, fitted by maximum likelihood on edits known to be right or
wrong, say how often an edit of that probability is right. It is stored as knots of the bundle's piecewise-linear
calibration (``RankerWeights.calibration``), dense in log-odds, so the Corrector reads it as before.
"""

from __future__ import annotations

import numpy as np

from corrector.rank import IDENTITY

EPS = 1e-6  # probabilities are clipped to [EPS, 1 - EPS] before their log-odds are taken
KNOT_LOGITS = np.linspace(-14.0, 14.0, 113)  # the knots' probabilities, in log-odds (0 and 1 are added)


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), EPS, 1 - EPS)
    return np.log(p) - np.log1p(-p)


def fit_logistic(p: np.ndarray, right: np.ndarray, l2: float = 1e-3, steps: int = 100) -> tuple[float, float]:
    """(a, b) maximising the likelihood of ``right`` under sigmoid(a * logit(p) + b), by Newton's method with a
    little L2 on a - 1 and b (the identity map, where the data say nothing). ValueError when a <= 0 (the
    probabilities order the edits the wrong way round) or there is nothing to fit."""
    x, y = logit(p), np.asarray(right, np.float64)
    if len(x) < 2 or y.min() == y.max():
        raise ValueError(f"a logistic calibration needs right and wrong edits, got {int(y.sum())} of {len(y)} right")
    X = np.stack([x, np.ones_like(x)], 1)
    prior = np.array([1.0, 0.0])

    def loss(w: np.ndarray) -> float:  # the negative log-likelihood and the L2 term, computed without overflow
        z = X @ w
        return float((np.logaddexp(0, z) - y * z).sum() + 0.5 * l2 * len(x) * ((w - prior) ** 2).sum())

    w = prior.copy()
    for _ in range(steps):  # Newton's method, each step halved until the loss falls
        q = np.exp(-np.logaddexp(0, -(X @ w)))
        grad = X.T @ (q - y) + l2 * len(x) * (w - prior)
        hess = (X * (q * (1 - q))[:, None]).T @ X + (l2 * len(x) + 1e-9) * np.eye(2)
        step = np.linalg.solve(hess, grad)
        t, before = 1.0, loss(w)
        while loss(w - t * step) > before and t > 1e-6:
            t /= 2
        w = w - t * step
        if np.abs(t * step).max() < 1e-10:
            break
    if not w[0] > 0:
        raise ValueError(f"the edits' probabilities do not order them (slope {w[0]:.3g})")
    return float(w[0]), float(w[1])


def logistic_knots(a: float, b: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The map sigmoid(a * logit(p) + b) as knots (probabilities, confidences), both rows strictly increasing,
    from (0, 0) to (1, 1)."""
    xs = [0.0, *(1 / (1 + np.exp(-KNOT_LOGITS))).tolist(), 1.0]
    ys = [0.0, *(1 / (1 + np.exp(-(a * KNOT_LOGITS + b)))).tolist(), 1.0]
    knots: list[tuple[float, float]] = []
    for x, y in zip(xs, ys):
        x, y = round(x, 9), round(y, 9)
        if not knots or (x > knots[-1][0] and y > knots[-1][1]):
            knots.append((x, y))
    if knots[-1] != (1.0, 1.0):  # rounding merged the last knots into one just below (1, 1)
        knots[-1] = (1.0, 1.0)
    px, cy = zip(*knots)
    return tuple(px), tuple(cy)


def fit_calibration(p: np.ndarray, right: np.ndarray) -> tuple[tuple[tuple[float, ...], tuple[float, ...]], dict]:
    """Knots of the logistic map fitted on edits (probability, right), and its parameters."""
    a, b = fit_logistic(p, right)
    return logistic_knots(a, b), {"form": "logistic", "a": round(a, 6), "b": round(b, 6)}


def reliability_table(confidence: np.ndarray, right: np.ndarray, bins: int = 10) -> tuple[list[dict], float]:
    """Edits bucketed by confidence (bins of equal width up to 1.0, the first from 0): mean confidence against
    share right, and the expected calibration error weighted by the bins' edits."""
    c, y = np.asarray(confidence, np.float64), np.asarray(right, np.float64)
    edges = np.linspace(0, 1, bins + 1)
    rows, gap = [], 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (c > lo) & (c <= hi) if lo > 0 else (c >= lo) & (c <= hi)
        if m.any():
            rows.append({"bin": f"{lo:.1f}-{hi:.1f}", "edits": int(m.sum()),
                         "mean_confidence": round(float(c[m].mean()), 3), "share_correct": round(float(y[m].mean()), 3)})
            gap += abs(float(c[m].mean()) - float(y[m].mean())) * int(m.sum())
    return rows, round(gap / max(len(c), 1), 4)


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
