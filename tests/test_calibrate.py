"""training.fitting.calibrate (the calibration step of training.fitting.fit): confidences calibrated again on more dev sets, the edits made unchanged."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from corrector import Corrector
from corrector.rank import HEURISTIC, Scorer

OLD = ((0.0, 0.2, 0.6, 0.9), (0.0, 0.3, 0.7, 0.95))  # a calibration that runs high


def edits(seed: int = 0, n: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities uniform on (0, 1), right with probability p**2 (a known map)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.0, 1.0, n)
    return p, (rng.uniform(0.0, 1.0, n) < p * p).astype(np.float64)


def test_recalibrate_keeps_the_edits_and_learns_the_new_map():
    from training.fitting.calibrate import recalibrate

    old_s = Scorer({"keep": 1.0}, calibration=OLD)
    new_s, new_t, done = recalibrate(old_s, 0.5, edits())
    assert done["threshold"] == [0.5, new_t] and new_t != 0.5 and new_s.linear == old_s.linear
    grid = np.linspace(0.001, 0.999, 5000)
    cut = old_s.uncalibrate(0.5)  # the probability the old threshold stands for
    far = np.abs(grid - cut) > 1e-3  # (the new threshold is rounded to 4 decimals)
    assert ((new_s.calibrate(grid) > new_t) == (old_s.calibrate(grid) > 0.5))[far].all()
    # the new map is the known one, p**2, within the noise of 4,000 edits; the old one ran high
    mid = np.array([0.3, 0.5, 0.7, 0.85])
    assert np.abs(new_s.calibrate(mid) - mid**2).max() < 0.06
    assert (old_s.calibrate(mid) - mid**2).min() > 0.1


def test_recalibrate_moves_the_threshold_even_off_the_edits():
    """The logistic map runs from 0 to 1, so a threshold whose probability no edit reached still maps to one
    confidence, and the same edits are made; edits that are all right (nothing to fit) keep the calibration."""
    from training.fitting.calibrate import recalibrate

    p, right = edits()
    low = p < 0.5  # edits only below the threshold's probability
    old_s = Scorer({"keep": 1.0}, calibration=OLD)
    new_s, new_t, done = recalibrate(old_s, 0.9, (p[low], right[low]))
    probability = old_s.uncalibrate(0.9)
    assert "kept" not in done and done["threshold"][0] == 0.9 and done["form"] == "logistic"
    assert new_t == pytest.approx(float(new_s.calibrate(probability)), abs=1e-4)
    assert new_s.uncalibrate(new_t) == pytest.approx(probability, abs=1e-3)
    same, same_t, done = recalibrate(old_s, 0.9, (p, np.ones_like(p)))
    assert (same, same_t) == (old_s, 0.9) and "right and wrong" in done["kept"]


def test_the_calibration_step_rewrites_the_confidences_of_a_bundle_and_keeps_its_edits(tiny_bundle, tmp_path: Path):
    """On the tiny model (a ranker and threshold at which it edits the texts): calibrated on pairs where half of
    its outputs are right, the same texts come out, with other confidences."""
    pytest.importorskip("torch")
    from training.fitting import fit

    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    eager = Scorer({"keep": -3.0, "gen_lp": 1.0})  # the tiny model's candidates at probabilities about 0.13
    fitted = replace(HEURISTIC, scorer=eager, scorer_no_lm=eager, meta={"fitted": True})
    fitted = fitted.with_threshold(True, 0.1).with_threshold(False, 0.1)
    (bundle / "ranker.json").write_text(json.dumps(fitted.to_dict(), ensure_ascii=False), encoding="utf-8")
    texts = ["今天天气很好", "我们去公园散步", "明天下雨了吗", "他知道自己错", "这件事情很简单", "中国人民银行"] * 4
    before = Corrector.load(bundle, device="cpu").correct_batch(texts)
    assert sum(bool(r.edits) for r in before) >= len(texts) // 2
    pairs = tmp_path / "mine.tsv"  # every other text's output is its target: those edits are right, the rest wrong
    pairs.write_text("".join(f"{r.source}\t{r.target if i % 2 else r.source}\n" for i, r in enumerate(before)),
                     encoding="utf-8")
    fit.main(["--model", str(bundle), "--steps", "calibration", "--calibrate-on", str(pairs), "--report",
              str(tmp_path / "report.json")])
    rule = json.loads((bundle / "ranker.json").read_text(encoding="utf-8"))["meta"]["calibration_rule"]
    assert rule["on"] == ["mine"] and json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == {
        "calibration": rule}
    assert 0.0 < rule["no_lm"]["share_right"] < 1.0 and rule["no_lm"]["edits"] >= len(texts) // 2
    after = Corrector.load(bundle, device="cpu").correct_batch(texts)
    assert [r.target for r in after] == [r.target for r in before]
    if "kept" not in rule["no_lm"]:
        assert [e.confidence for r in after for e in r.edits] != [e.confidence for r in before for e in r.edits]


def test_the_calibration_step_needs_sets_to_calibrate_on_and_the_data_for_the_dev_split(tiny_bundle, tmp_path: Path,
                                                                                        capsys):
    from training.fitting import fit

    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    (bundle / "ranker.json").write_text(json.dumps(replace(HEURISTIC, meta={"fitted": True}).to_dict()),
                                        encoding="utf-8")
    with pytest.raises(SystemExit, match="--calibrate-on"):
        fit.main(["--model", str(bundle), "--steps", "calibration"])
    with pytest.raises(SystemExit):
        fit.main(["--model", str(bundle), "--steps", "calibration", "--calibrate-on-dev"])
    assert "--data is needed" in capsys.readouterr().err


def test_recalibrate_without_edits_keeps_the_calibration():
    from training.fitting.calibrate import recalibrate

    old_s = Scorer({"keep": 1.0}, calibration=OLD)
    new_s, new_t, done = recalibrate(old_s, 0.5, (np.zeros(0), np.zeros(0)))
    assert (new_s, new_t) == (old_s, 0.5) and done["edits"] == 0 and "kept" in done
