"""Unreliable edit pairs (training.fitting.pair_veto, the veto step of training.fitting.fit): counted on the training pairs, stored in ranker.json, never made."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import FORCE_EDITS

from corrector import Corrector, CorrectorError
from corrector.rank import Scorer


def test_veto_round_trips_through_ranker_json():
    s = Scorer({"keep": 1.0}, veto={"甚什": (6, 66), "他她": (6, 61)})
    back = Scorer.from_dict(json.loads(json.dumps(s.to_dict(), ensure_ascii=False)))
    assert back == s and back.veto["甚什"] == (6, 66)
    assert "veto" not in Scorer({"keep": 1.0}).to_dict()
    with pytest.raises(ValueError, match="two characters"):
        Scorer.from_dict({"linear": {"keep": 1.0}, "veto": {"甚么什": [1, 2]}})


def test_unreliable_pairs_need_enough_edits_and_too_few_right():
    pytest.importorskip("torch")  # training extras
    from training.fitting.pair_veto import threshold_grid, unreliable

    right = Counter({"甚什": 6, "门们": 75, "牠他": 0, "田天": 1})
    wrong = Counter({"甚什": 66, "门们": 1, "牠他": 3, "田天": 9, "的地": 4})
    # (r + 1) / (n + 2): 甚什 0.095, 田天 0.167 vetoed; 牠他 has 3 edits and 的地 4, under min_edits 5
    assert unreliable(right, wrong, 5, 0.2) == {"甚什": (6, 66), "田天": (1, 9)}
    assert unreliable(right, wrong, 3, 0.2) == {"甚什": (6, 66), "田天": (1, 9), "的地": (0, 4)}  # 牠他: 1/5, not < 0.2
    assert unreliable(right, wrong, 3, 0.25) == {"甚什": (6, 66), "田天": (1, 9), "牠他": (0, 3), "的地": (0, 4)}
    assert unreliable(right, wrong, 5, 0.1) == {"甚什": (6, 66)}
    grid = threshold_grid(0.437, below=2, above=1)
    assert grid == [0.387, 0.412, 0.437, 0.462]
    assert threshold_grid(0.02)[0] == 0.01 and threshold_grid(0.98)[-1] == 0.99


def test_a_vetoed_pair_is_never_made_and_explain_says_why(tiny_bundle):
    fix = Corrector.load(tiny_bundle, device="cpu", confusions=[("汽", "气")], threshold=0.0)
    text = "今天天汽很好"
    plain = fix.correct(text)
    assert ("汽", "气") in {(e.source, e.target) for e in plain.edits if e.position == 3}
    for use_lm in (True, False):  # the tiny bundle has no LM: both settings decode with scorer_no_lm
        fix = fix.with_ranker(fix.ranker.with_scorer(use_lm, replace(fix.ranker.pick(use_lm), veto={"汽气": (0, 9)})))
    vetoed = fix.correct(text)
    assert not any(e.position == 3 for e in vetoed.edits)
    assert [e for e in plain.edits if e.position != 3] == vetoed.edits
    assert "汽→气 was right in 0 of its 9 edits" in fix.explain(text).chars[3].decision
    assert fix.correct(text, veto_unreliable_pairs=False) == plain
    with pytest.raises(CorrectorError, match="veto_unreliable_pairs"):
        fix.correct(text, veto_unreliable_pairs=1)


def test_pair_veto_writes_the_pairs_the_decoder_got_wrong(tiny_bundle, tmp_path: Path):
    """End to end on the tiny model forced to edit: every edit it makes on the training pairs is wrong (their
    targets are the text as written), so every pair made often enough is vetoed, and the bundle then never makes
    one of them."""
    pytest.importorskip("torch")
    from corrector.rank import HEURISTIC
    from training.fitting import fit

    data = tmp_path / "data"
    (data / "csc").mkdir(parents=True)
    lines = "".join(f"今天天气很好{i}\t今天天气很好{i}\n" for i in range(12))
    for name in ("sighan_train.tsv", "csc_hard_train.tsv"):
        (data / "csc" / name).write_text(lines, encoding="utf-8")
    bundle = Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["corrector_defaults"] = FORCE_EDITS
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    fitted = replace(HEURISTIC, meta={"fitted": True}).with_threshold(True, 0.0).with_threshold(False, 0.0)
    (bundle / "ranker.json").write_text(json.dumps(fitted.to_dict(), ensure_ascii=False), encoding="utf-8")
    before = Corrector.load(bundle, device="cpu").correct("今天天气很好")
    assert before.edits
    # one round: the pairs are counted at the ranker's threshold, 0 (the bundle's default only decides what it makes)
    fit.main(["--model", str(bundle), "--data", str(data), "--steps", "veto", "--holdout", "2", "--min-edits", "5",
              "--rounds", "1", "--report", str(tmp_path / "report.json")])
    ranker = json.loads((bundle / "ranker.json").read_text(encoding="utf-8"))
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["veto"]
    for key in ("with_lm", "no_lm"):
        made = {p: c for p, c in report[key]["rounds"][-1]["pairs"].items() if sum(c) >= 5}
        assert made and ranker[key]["veto"] == made and all(r == 0 for r, _ in made.values())
    after = Corrector.load(bundle, device="cpu")
    assert not {e.source + e.target for e in after.correct("今天天气很好").edits} & set(ranker["no_lm"]["veto"])
    assert ranker["meta"]["veto"]["min_edits"] == 5
