"""training.fitting.fit: the decoder's fitting steps chained in one command, ranker.json written once at the end."""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from corrector import Corrector
from corrector.rank import HEURISTIC, Scorer


def test_steps_are_known_and_run_in_their_order():
    from training.fitting.fit import steps

    assert steps("calibration,veto") == ("veto", "calibration")
    assert steps("ranker,veto,threshold,calibration") == ("ranker", "veto", "threshold", "calibration")
    for bad in ("", "veto,thresholds"):
        with pytest.raises(argparse.ArgumentTypeError):
            steps(bad)


def test_chosen_scorers_and_thresholds_go_into_the_ranker_with_their_rule():
    from training.fitting.fit import chosen_into

    vetoed = Scorer({"keep": 2.0}, veto={"甚什": (1, 9)})
    out = chosen_into(replace(HEURISTIC, meta={"fitted": True}), {False: (vetoed, 0.37)}, "veto", {"min_edits": 5})
    assert out.pick(False) == vetoed and out.threshold_no_lm == 0.37
    assert out.pick(True) == HEURISTIC.pick(True) and out.threshold == HEURISTIC.threshold  # the other kept
    assert out.meta == {"fitted": True, "veto": {"min_edits": 5}}


def test_fit_chains_the_steps_and_writes_ranker_json_once(tiny_bundle, tiny_lm, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    """veto, threshold and calibration on the tiny model with an LM and an eager ranker: each step starts from what
    the one before chose (the threshold step's choice is the threshold the calibration moves), and ranker.json is
    written once, with every step's choice and rule."""
    pytest.importorskip("torch")
    from training.bundle import export
    from training.fitting import fit

    data = tmp_path / "data"
    (data / "csc").mkdir(parents=True)
    texts = ["今天天气很好", "我们去公园散步", "明天下雨了吗", "他知道自己错", "这件事情很简单", "中国人民银行"]
    for name in ("sighan_train.tsv", "csc_hard_train.tsv", "wang271k_dev.tsv"):
        (data / "csc" / name).write_text("".join(f"{t}\t{t}\n" for t in texts), encoding="utf-8")
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    export.main(["--update", str(bundle), "--lm", str(tiny_lm)])
    eager = Scorer({"keep": -3.0, "gen_lp": 1.0})  # the tiny model's candidates at probabilities about 0.13
    start = replace(HEURISTIC, scorer=eager, scorer_no_lm=eager, meta={"fitted": True})
    start = start.with_threshold(True, 0.1).with_threshold(False, 0.1)
    (bundle / "ranker.json").write_text(json.dumps(start.to_dict(), ensure_ascii=False), encoding="utf-8")
    before = Corrector.load(bundle, device="cpu").correct_batch(texts * 4)
    mine = tmp_path / "mine.tsv"  # every other text's output is its target: those edits are right, the rest wrong
    mine.write_text("".join(f"{r.source}\t{r.target if i % 2 else r.source}\n" for i, r in enumerate(before)),
                    encoding="utf-8")
    written: list[Path] = []
    write_text = Path.write_text
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: written.append(self) or write_text(self, *a, **k))
    fit.main(["--model", str(bundle), "--data", str(data), "--steps", "veto,threshold,calibration", "--holdout", "2",
              "--max-fpr", "1.0", "--min-edits", "2", "--max-changed", "1.0", "--grid", "0.05,0.1,0.15",
              "--calibrate-on", str(mine), "--report", str(tmp_path / "report.json")])
    assert [p.name for p in written] == ["ranker.json", "report.json"]
    ranker = json.loads((bundle / "ranker.json").read_text(encoding="utf-8"))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert set(ranker["meta"]) == {"fitted", "veto", "threshold_rule", "calibration_rule"}
    veto, chosen, calibration = report["veto"], report["threshold"]["chosen"], report["calibration"]
    assert ranker["with_lm"].get("veto", {}) == veto["with_lm"]["veto"]
    assert ranker["no_lm"].get("veto", {}) == veto["no_lm"]["veto"]
    assert calibration["with_lm"]["threshold"] == [chosen, ranker["threshold"]]  # the threshold step's, moved
    assert calibration["no_lm"]["threshold"] == [veto["no_lm"]["threshold"], ranker["threshold_no_lm"]]
    assert ranker["meta"]["threshold_rule"]["before"] == veto["with_lm"]["threshold"]
    assert ranker["meta"]["calibration_rule"] == calibration and calibration["on"] == ["mine"]


def test_fit_without_the_ranker_step_needs_a_fitted_ranker(tiny_bundle, tmp_path: Path):
    from training.fitting import fit

    with pytest.raises(SystemExit, match="no fitted ranker.json"):
        fit.main(["--model", str(tiny_bundle), "--data", str(tmp_path), "--steps", "veto"])


def test_a_thinned_table_keeps_every_error_and_fits_as_the_whole_does():
    """Before: a tiny random pair flags every character, and from_pretrained fitted on 1.34M rows (1,409 s a fit;
    issue 72, 7). A table thinned to a row budget keeps every site with an error and a sample of the others, each
    weighted by one over the share sampled: the fitted weights stay those of the whole table."""
    pytest.importorskip("torch")
    import numpy as np

    from corrector.features import COL, FEATURES
    from training.fitting.conditional_logit import fit_conditional_logit
    from training.fitting.table import Table

    rng = np.random.default_rng(1)
    n_sites, per = 6000, 4
    site = np.repeat(np.arange(n_sites), per)
    X = np.zeros((n_sites * per, len(FEATURES)))
    X[::per, COL["keep"]] = 1.0  # each site's first row keeps the character
    X[:, COL["rtd"]] = rng.normal(size=len(site))
    X[:, COL["pinyin"]] = rng.normal(size=len(site))
    score = 4.5 * X[:, COL["keep"]] + 1.5 * X[:, COL["pinyin"]]  # the truth
    p = np.exp(score).reshape(n_sites, per)
    p /= p.sum(1, keepdims=True)
    gold = np.array([rng.choice(per, p=q) for q in p])
    label = np.zeros(len(site), bool)
    label[np.arange(n_sites) * per + gold] = True
    t = Table(X, site, label, erroneous=gold != 0, reachable=np.ones(n_sites, bool))
    thin = t.thinned(8000, seed=0)
    assert len(thin.X) <= 8000 * 1.1 and thin.erroneous.sum() == t.erroneous.sum()
    assert thin.weight is not None and set(np.round(thin.weight[thin.erroneous], 6)) == {1.0}
    assert t.thinned(10**9) is t  # within the budget: the table itself
    whole = fit_conditional_logit(t, ["keep", "pinyin", "rtd"]).linear
    part = fit_conditional_logit(thin, ["keep", "pinyin", "rtd"]).linear
    assert abs(whole["keep"] - 4.5) < 0.3 and abs(part["keep"] - whole["keep"]) < 0.25, (whole, part)
    assert abs(part["pinyin"] - whole["pinyin"]) < 0.25 and abs(part["rtd"]) < 0.2
    unweighted = fit_conditional_logit(Table(thin.X, thin.site, thin.label, thin.erroneous, thin.reachable),
                                       ["keep", "pinyin", "rtd"]).linear
    assert unweighted["keep"] < part["keep"] - 0.5  # without the weights, keeping looks much rarer than it is
