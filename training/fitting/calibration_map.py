"""The map from the ranker's probability to an edit's confidence: logistic in the probability's log-odds.

An isotonic map (``ranker.fit_isotonic``) is flat between and beyond its pooled blocks: every edit above the last
block's mean probability gets that block's share right (0.84 in the bundle of 2026-11-27), so a near-certain edit
and a borderline one tie, and a threshold above the top confidence silently makes no edit. The logistic map

    confidence = sigmoid(a * logit(p) + b),  a > 0

is strictly increasing on [0, 1] and runs from 0 to 1, so it keeps the ranker's order all the way up (ties only
where the probabilities tie), while its two parameters, fitted by maximum likelihood on edits known to be right or
wrong, say how often an edit of that probability is right. It is stored as knots of the bundle's piecewise-linear
calibration (``RankerWeights.calibration``), dense in log-odds, so the Corrector reads it as before.
"""

from __future__ import annotations

import numpy as np

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
