"""training.fitting.threshold (a step of training.fitting.fit): the with-LM threshold chosen on dev under a dev FPR cap and a cap on correct text changed."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FORCE_EDITS

from corrector import Corrector


def row(threshold: float, f1: float, fpr: float) -> dict:
    return {"threshold": threshold, "sentence_correction": {"f1": f1}, "false_positive_rate": fpr}


def test_choose_takes_the_best_dev_f1_within_both_caps():
    from training.fitting.threshold import choose

    rows = [row(0.4, 0.48, 0.07), row(0.5, 0.47, 0.05), row(0.6, 0.45, 0.03), row(0.7, 0.45, 0.02)]
    changed = [0.08, 0.06, 0.04, 0.03]
    assert choose(rows, changed, max_fpr=0.08, max_changed=1.0)["threshold"] == 0.4  # the dev FPR cap alone
    assert choose(rows, changed, max_fpr=0.08, max_changed=0.05)["threshold"] == 0.7  # tie on F1: the higher
    assert choose(rows, changed, max_fpr=0.04, max_changed=0.07)["threshold"] == 0.7
    assert choose(rows, changed, max_fpr=0.08, max_changed=0.01) is None


def test_choose_on_more_sets_takes_the_best_mean_f1_within_each_sets_cap():
    from training.fitting.threshold import choose

    dev = [row(0.4, 0.48, 0.07), row(0.5, 0.47, 0.05), row(0.6, 0.45, 0.03), row(0.7, 0.40, 0.02)]
    a = [row(0.4, 0.30, 0.05), row(0.5, 0.36, 0.03), row(0.6, 0.35, 0.02), row(0.7, 0.20, 0.01)]
    b = [row(0.4, 0.20, 0.02), row(0.5, 0.10, 0.04), row(0.6, 0.18, 0.02), row(0.7, 0.18, 0.01)]
    changed = [0.0] * 4
    # means: 0.4 -> 0.327, 0.5 -> 0.310, 0.6 -> 0.327, 0.7 -> 0.260; 0.4 has a's FPR 5%, 0.5 b's 4%
    assert choose(dev, changed, 0.08, 1.0, [a, b], max_fpr_each=1.0)["threshold"] == 0.6  # tie: the higher
    assert choose(dev, changed, 0.08, 1.0, [a, b], max_fpr_each=0.03)["threshold"] == 0.6
    assert choose(dev, changed, 0.08, 1.0, [a], max_fpr_each=0.03)["threshold"] == 0.5  # (0.47 + 0.36) / 2
    assert choose(dev, changed, 0.08, 1.0, [a, b], max_fpr_each=0.005) is None


def test_grid_parses_ranges_and_lists():
    import argparse

    from training.fitting.threshold import grid

    assert grid("0.4:0.5:0.05") == [0.4, 0.45, 0.5]
    assert grid("0.3,0.6") == [0.3, 0.6]
    for bad in ("0:0.5:0.1", "x", "0.5,1.2"):
        with pytest.raises(argparse.ArgumentTypeError):
            grid(bad)


def test_threshold_is_written_where_correct_text_is_left_alone(tiny_bundle, tiny_lm, tmp_path: Path):
    """The tiny model forced to edit changes every correct sentence below some threshold: with a cap of 0 changed,
    the chosen threshold is one at which none of them is changed, and the bundle then leaves them alone."""
    pytest.importorskip("torch")
    from corrector.rank import HEURISTIC
    from training.bundle import export
    from training.fitting import fit

    data = tmp_path / "data"
    (data / "csc").mkdir(parents=True)
    texts = ["今天天气很好", "我们去公园散步", "明天下雨了吗", "他知道自己错", "这件事情很简单", "中国人民银行"]
    lines = "".join(f"{t}\t{t}\n" for t in texts)
    for name in ("sighan_train.tsv", "csc_hard_train.tsv", "wang271k_dev.tsv"):
        (data / "csc" / name).write_text(lines, encoding="utf-8")
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    export.main(["--update", str(bundle), "--lm", str(tiny_lm)])  # the threshold chosen is the with-LM one
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["corrector_defaults"] = {k: v for k, v in FORCE_EDITS.items() if k != "threshold"}
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    fitted = replace(HEURISTIC, meta={"fitted": True}).with_threshold(True, 0.0001)
    (bundle / "ranker.json").write_text(json.dumps(fitted.to_dict(), ensure_ascii=False), encoding="utf-8")
    assert Corrector.load(bundle, device="cpu").correct("明天下雨了吗").edits  # edits correct text at 0.0001
    fit.main(["--model", str(bundle), "--data", str(data), "--steps", "threshold", "--holdout", "2", "--max-fpr", "1.0",
              "--max-changed", "0.0", "--grid", "0.0001,0.5,0.99", "--report", str(tmp_path / "report.json")])
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["threshold"]
    chosen = report["chosen"]
    assert next(r for r in report["table"] if r["threshold"] == chosen)["changed"] == 0.0
    assert report["table"][0]["changed"] > 0  # at 0.0001 it did change them
    ranker = json.loads((bundle / "ranker.json").read_text(encoding="utf-8"))
    assert ranker["threshold"] == chosen and ranker["meta"]["threshold_rule"]["max_changed"] == 0.0
    fix = Corrector.load(bundle, device="cpu")
    assert not any(r.edits for r in fix.correct_batch(texts))
