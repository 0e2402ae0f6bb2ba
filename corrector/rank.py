"""Decide: a conditional logit over each site's choices, applied iteratively.

P(choice | site) = softmax over the site's rows of w · features. The keep row is one of the choices,
so an edit's probability is the probability that the candidate, not the character written, is what
was meant; the weights are fitted on real errors (``training.fitting.ranker``) and the probability is
checked for calibration on the dev split. An edit is applied when its probability is above the
threshold. After each round the LM features of the neighbours of applied edits are scored again on
the corrected text, so several errors in one sentence, adjacent ones included, are fixed in turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from corrector.bundle import RANKER, Bundle
from corrector.features import CHEAP, COL, FEATURES, Rows
from corrector.types import CorrectorError

MAX_ROUNDS = 4


IDENTITY = ((0.0, 1.0), (0.0, 1.0))  # the calibration that leaves probabilities as they are


@dataclass(frozen=True)
class Scorer:
    """score(x) = Σ_f linear[f]·x_f + Σ_j out[j]·tanh(Σ_f hidden[f][j]·x_f + bias[j]), every weight named by
    its feature; a linear name "a*b" weighs the product of two features. With no hidden units and no
    products it is the plain conditional logit."""

    linear: dict[str, float]
    hidden: dict[str, list[float]] = field(default_factory=dict)  # feature -> its weight into each hidden unit
    bias: list[float] = field(default_factory=list)
    out: list[float] = field(default_factory=list)
    # (probabilities, confidences): an edit's confidence is the piecewise-linear map through these knots of its
    # probability p (isotonic regression on the dev split's edits; both rows strictly increasing, so it changes
    # what a threshold means, never which edit is more likely); below the first knot it stays at the first
    # confidence, above the last at the last
    calibration: tuple[tuple[float, ...], tuple[float, ...]] = IDENTITY
    # unreliable pairs: "ab" -> (right, wrong), the edits a -> b this scorer made decoding the real training pairs
    # when they were mostly wrong (甚 -> 什, 他 -> 她 in sighan_train); never made (``veto_unreliable_pairs``;
    # training.fitting.pair_veto)
    veto: dict[str, tuple[int, int]] = field(default_factory=dict)

    def calibrate(self, p: np.ndarray | float) -> np.ndarray:
        xs, ys = self.calibration
        return np.interp(np.asarray(p, dtype=np.float64), xs, ys)

    def uncalibrate(self, t: float) -> float:
        """The probability threshold that makes the same edits as confidence threshold ``t``: edits are applied
        where p > it exactly where calibrate(p) > t (0 when every confidence is above t, 1 when none is)."""
        xs, ys = self.calibration
        if t < ys[0]:
            return 0.0
        if t >= ys[-1]:
            return 1.0
        return float(np.interp(t, ys, xs))

    def weighs(self, feature: str) -> bool:
        """Whether the feature counts at all (a non-zero weight of its own, in a product or into a hidden unit)."""
        return any(w != 0.0 for name, w in self.linear.items() if feature in name.split("*")) or \
            any(w != 0.0 for w in self.hidden.get(feature, ()))

    def score(self, X: np.ndarray) -> np.ndarray:
        X = X.astype(np.float64)
        s = X @ np.array([float(self.linear.get(f, 0.0)) for f in FEATURES])
        for name, w in self.linear.items():  # products of two features, named "a*b"
            if "*" in name:
                a, b = name.split("*")
                s += w * X[:, COL[a]] * X[:, COL[b]]
        if self.out:
            U = np.array([self.hidden.get(f, [0.0] * len(self.out)) for f in FEATURES], dtype=np.float64)
            s = s + np.tanh(X @ U + np.asarray(self.bias, np.float64)) @ np.asarray(self.out, np.float64)
        return s

    def to_dict(self) -> dict:
        d: dict = {"linear": self.linear}
        if self.out:
            d.update(hidden=self.hidden, bias=self.bias, out=self.out)
        if self.calibration != IDENTITY:
            d["calibration"] = {"probability": list(self.calibration[0]), "confidence": list(self.calibration[1])}
        if self.veto:
            d["veto"] = {pair: list(counts) for pair, counts in self.veto.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Scorer:
        if "linear" not in d:  # a plain {feature: weight} map
            d = {"linear": d}
        names = {p for k in d["linear"] for p in k.split("*")} | set(d.get("hidden", {}))
        unknown = names - set(FEATURES)
        if unknown:
            raise ValueError(f"ranker weights name unknown features: {', '.join(sorted(unknown))}")
        out = [float(v) for v in d.get("out", [])]
        hidden = {f: [float(v) for v in ws] for f, ws in d.get("hidden", {}).items()}
        if any(len(ws) != len(out) for ws in hidden.values()) or len(d.get("bias", [])) != len(out):
            raise ValueError("ranker hidden layer: every feature needs one weight per hidden unit")
        cal = d.get("calibration", {"probability": IDENTITY[0], "confidence": IDENTITY[1]})
        xs, ys = (tuple(float(v) for v in cal[k]) for k in ("probability", "confidence"))
        if len(xs) < 2 or len(xs) != len(ys) or np.any(np.diff(xs) <= 0) or np.any(np.diff(ys) <= 0) \
                or min(xs + ys) < 0.0 or max(xs + ys) > 1.0:
            raise ValueError("ranker calibration: probability and confidence knots must be two equally long, "
                             "strictly increasing lists in [0, 1] (a monotone map)")
        veto = {str(pair): (int(c[0]), int(c[1])) for pair, c in d.get("veto", {}).items()}
        if any(len(pair) != 2 for pair in veto):
            raise ValueError("ranker veto: each pair is two characters, the one written and its replacement")
        return cls({f: float(v) for f, v in d["linear"].items()}, hidden, [float(v) for v in d.get("bias", [])], out,
                   (xs, ys), veto)


@dataclass(frozen=True)
class RankerWeights:
    """The decoder's learned part, as stored in the bundle's ``ranker.json``."""

    scorer: Scorer  # over FEATURES, with the LM
    scorer_no_lm: Scorer  # fitted without the LM (lm_gain unused)
    shortlist: dict[str, float]  # over CHEAP: the linear score that cuts the candidates
    threshold: float = 0.5  # default threshold on the confidence (calibrate(p); chosen on dev), as a user's ...
    threshold_no_lm: float = 0.5  # ... and the one for decoding without the LM
    meta: dict = field(default_factory=dict)

    @classmethod
    def of_bundle(cls, bundle: Bundle) -> RankerWeights:
        """The bundle's fitted ranker (``ranker.json``), or the hand-set one where it has none; CorrectorError
        names a file that cannot be read."""
        path = bundle.file(RANKER)
        if not path.is_file():
            return HEURISTIC
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise CorrectorError(f"bad model bundle: {path}: {e}") from None

    def pick(self, use_lm: bool) -> Scorer:
        return self.scorer if use_lm else self.scorer_no_lm

    def threshold_for(self, use_lm: bool) -> float:
        """The bundle's confidence threshold for decoding with the LM or without it."""
        return self.threshold if use_lm else self.threshold_no_lm

    def with_scorer(self, use_lm: bool, scorer: Scorer) -> RankerWeights:
        """A copy with ``scorer`` in place of the one ``pick(use_lm)`` gives."""
        return replace(self, scorer=scorer) if use_lm else replace(self, scorer_no_lm=scorer)

    def with_threshold(self, use_lm: bool, threshold: float) -> RankerWeights:
        """A copy with ``threshold`` as the default threshold of the scorer ``pick(use_lm)`` gives."""
        return replace(self, threshold=threshold) if use_lm else replace(self, threshold_no_lm=threshold)

    def save(self, path: Path) -> None:
        """Write ``ranker.json`` (the fit writes it, and ``corrector adapt`` when the threshold follows its LM)."""
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    def to_dict(self) -> dict:
        return {"features": list(FEATURES), "cheap_features": list(CHEAP), "with_lm": self.scorer.to_dict(),
                "no_lm": self.scorer_no_lm.to_dict(), "shortlist": self.shortlist, "threshold": self.threshold,
                "threshold_no_lm": self.threshold_no_lm, "meta": self.meta}

    @classmethod
    def from_dict(cls, d: dict) -> RankerWeights:
        unknown = set(d["shortlist"]) - set(CHEAP)
        if unknown:
            raise ValueError(f"ranker shortlist names unknown features: {', '.join(sorted(unknown))}")
        return cls(Scorer.from_dict(d["with_lm"]), Scorer.from_dict(d.get("no_lm", d["with_lm"])),
                   {k: float(v) for k, v in d["shortlist"].items()}, float(d.get("threshold", 0.5)),
                   float(d.get("threshold_no_lm", d.get("threshold", 0.5))), dict(d.get("meta", {})))


# Used when a bundle carries no fitted ranker (e.g. a user's own exported HF pair): the earlier
# hand-set ranking (generator log-probability plus a similarity bonus) in this form.
HEURISTIC = RankerWeights(
    scorer=Scorer({"keep": 2.0, "gen_lp": 1.0, "pinyin": 2.0, "shape": 2.0, "lm_gain": 1.0, "custom": 5.0,
                   "word": 0.2}),
    scorer_no_lm=Scorer({"keep": 2.0, "gen_lp": 1.0, "pinyin": 2.0, "shape": 2.0, "custom": 5.0, "word": 0.2}),
    shortlist={"gen_lp": 1.0, "pinyin": 3.0, "shape": 2.0, "confusions": 0.5},
    meta={"fitted": False},
)


def site_starts(rows: Rows, n_sites: int) -> np.ndarray:
    """Index of each site's first (keep) row; rows are grouped by site, every site has its keep row."""
    return np.searchsorted(rows.site, np.arange(n_sites), side="left")


def choice_probs(rows: Rows, scorer: Scorer, n_sites: int) -> np.ndarray:
    """Softmax of the rows' scores within each site."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.float64)
    s = scorer.score(rows.X)
    starts = site_starts(rows, n_sites)
    m = np.maximum.reduceat(s, starts)
    e = np.exp(s - m[rows.site])
    z = np.add.reduceat(e, starts)
    return e / z[rows.site]


def best_candidates(rows: Rows, p: np.ndarray, n_sites: int, open_sites: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, probability) of the most probable non-keep row of each site, -1/0 where there is none."""
    cand = (rows.X[:, COL["keep"]] == 0) & open_sites[rows.site]
    best_row = np.full(n_sites, -1, dtype=np.int64)
    best_p = np.zeros(n_sites, dtype=np.float64)
    idx = np.flatnonzero(cand)
    if len(idx):
        order = idx[np.lexsort((-p[idx], rows.site[idx]))]
        first = np.concatenate(([True], rows.site[order][1:] != rows.site[order][:-1]))
        top = order[first]
        best_row[rows.site[top]] = top
        best_p[rows.site[top]] = p[top]
    return best_row, best_p


def pick_round(chunk: np.ndarray, char: np.ndarray, best_row: np.ndarray, best_p: np.ndarray, threshold: float,
               spacing: int) -> list[int]:
    """Sites to edit this round: above the threshold, most probable first, none within ``spacing``
    characters of another picked in the same chunk (their evidence overlaps; they wait a round)."""
    picked: list[int] = []
    taken: dict[int, list[int]] = {}
    for s in np.argsort(-best_p, kind="stable"):
        if best_p[s] <= threshold:
            break
        if best_row[s] < 0:  # no candidate
            continue
        c, i = int(chunk[s]), int(char[s])
        if any(abs(i - j) < spacing for j in taken.get(c, ())):
            continue
        taken.setdefault(c, []).append(i)
        picked.append(int(s))
    return picked
