"""Is the discriminator learning? Held-out RTD AUC, the spread of its token representations, and the
rule that stops a pretraining run whose discriminator has collapsed (every position the same vector,
so every position gets the same score)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def rtd_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """ROC AUC of ``scores`` for ``labels`` (1 = replaced): the chance that a replaced token outscores an
    original one, ties counting half (Mann-Whitney U with average ranks). NaN when a class is missing."""
    scores, labels = scores.flatten().double(), labels.flatten().bool()
    n_pos, n = int(labels.sum()), len(labels)
    n_neg = n - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    order = torch.argsort(scores)
    s = scores[order]
    ranks = torch.empty(n, dtype=torch.float64)
    # average rank within each run of equal scores
    _, inverse, counts = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()
    avg = ends - (counts.double() - 1) / 2  # 1-based mean rank of each run
    ranks[order] = avg[inverse]
    u = float(ranks[labels].sum()) - n_pos * (n_pos + 1) / 2
    return u / (n_pos * n_neg)


def rtd_skill(loss: float, replaced: float) -> float:
    """1 - RTD loss / the loss of always predicting the share of replaced tokens (its binary entropy, nats):
    0 for a discriminator that has learned nothing beyond the base rate, 1 for a perfect one. A run whose
    AUC sags while this stays near 0 is a discriminator that has stopped learning, whatever its spread."""
    p = min(max(replaced, 1e-9), 1 - 1e-9)
    base = -(p * math.log(p) + (1 - p) * math.log(1 - p))
    return 1.0 - loss / base


def representation_spread(h: torch.Tensor, max_tokens: int = 4096) -> dict[str, float]:
    """How different the token vectors ``h`` (N, D) are from each other.

    ``cos``: mean cosine between two different tokens (1.0 when every token has the same direction).
    ``std``: per-dimension standard deviation across tokens, averaged over dimensions and divided by the
    vectors' RMS entry, so it does not depend on their scale (0.0 when every token is the same vector)."""
    h = h.detach().double().reshape(-1, h.shape[-1])[:max_tokens]
    n = len(h)
    if n < 2:
        return {"cos": math.nan, "std": math.nan}
    u = h / h.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    total = u.sum(0)
    cos = (float(total @ total) - n) / (n * (n - 1))  # mean of the off-diagonal Gram entries
    rms = float(h.pow(2).mean().sqrt()) or 1e-12
    return {"cos": cos, "std": float(h.std(0).mean()) / rms}


@dataclass
class CollapseGuard:
    """Says when to stop: after ``after_step`` (the warmup), ``patience`` evaluations in a row with the
    held-out AUC at most ``max_auc`` and the top-layer spread at most ``max_std``."""

    after_step: int
    max_auc: float = 0.6
    max_std: float = 0.05
    patience: int = 2
    strikes: int = 0

    def check(self, step: int, auc: float, std: float) -> str | None:
        """Record one evaluation; returns the reason to stop, or None."""
        bad = step > self.after_step and (math.isnan(auc) or auc <= self.max_auc) and std <= self.max_std
        self.strikes = self.strikes + 1 if bad else 0
        if self.strikes < self.patience:
            return None
        return (f"discriminator collapsed at step {step}: held-out RTD AUC {auc:.3f} (<= {self.max_auc}) and "
                f"top-layer representation spread {std:.4f} (<= {self.max_std}) in {self.strikes} evaluations in "
                "a row after warmup; every position looks alike, so more steps will not help. Lower --lr, "
                "lengthen --warmup-steps or change the recipe and start a new --out.")
