"""Mainland forms: SIGHAN's particle 著 is read as 着 in training pairs, and no edit writes it into simplified text;
and the five native dev domains with their FPR caps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from corrector.decide import mainland_edits
from corrector.text.mainland import mainland_pair, mainland_target, zhe_form
from corrector.types import Edit
from training.data.native_dev import DOMAINS, FILES, fpr_cap
from training.data.pair_files import read_pairs


@pytest.mark.parametrize("text, want", [
    ("桌子前面坐著工作", "桌子前面坐着工作"),
    ("随著时间的推移，他很著急", "随着时间的推移，他很着急"),
    ("意味著什么，执著的人", "意味着什么，执着的人"),
    ("他是著名作家，著作很多，成绩显著", "他是著名作家，著作很多，成绩显著"),
    ("澳洲土著的名著", "澳洲土著的名著"),
    ("他所著的书", "他所著的书"),
])
def test_particle_zhu_is_read_as_mainland_zhe(text: str, want: str) -> None:
    assert mainland_pair(text, text) == (want, want)


def test_a_typo_for_the_particle_targets_zhe_and_zhu_words_stay() -> None:
    assert mainland_pair("桌子前面坐者工作", "桌子前面坐著工作") == ("桌子前面坐者工作", "桌子前面坐着工作")
    assert mainland_pair("他是着名作家", "他是著名作家") == ("他是着名作家", "他是著名作家")  # a real 着 -> 著 fix
    assert mainland_pair("没有错", "没有错") == ("没有错", "没有错")
    assert zhe_form("显著", 1) == "著" and mainland_target("坐著", 1, "著") == "着" and mainland_target("坐著", 1, "在") == "在"


def test_training_pairs_are_read_in_mainland_form(tmp_path: Path) -> None:
    f = tmp_path / "train.tsv"
    f.write_text("桌子前面坐者工作\t桌子前面坐著工作\n他是着名作家\t他是著名作家\n", encoding="utf-8")
    assert read_pairs(f)[0] == [("桌子前面坐者工作", "桌子前面坐着工作"), ("他是着名作家", "他是著名作家")]


def test_edits_never_write_the_particle_as_zhu() -> None:
    text = "桌子前面坐者工作，他是着名作家"
    edits = [Edit(5, "者", "著", 0.9, "pinyin"), Edit(11, "着", "著", 0.8, "pinyin")]
    assert mainland_edits(text, edits) == [Edit(5, "者", "着", 0.9, "pinyin"), Edit(11, "着", "著", 0.8, "pinyin")]
    # an edit 着 -> 著 where mainland text writes 着 changes nothing, and is not made
    assert mainland_edits("他坐着工作", [Edit(2, "着", "著", 0.7, "pinyin")]) == []


def test_five_native_domains_with_their_caps() -> None:
    assert DOMAINS == ("enc", "mec", "cot", "gam", "cscd_ns") and FILES["cscd_ns"] == "csc/cscd_ns_dev.tsv"
    assert fpr_cap("gam") == 0.03 and fpr_cap("cscd_ns") == 0.06


def test_lodo_chooses_within_each_domains_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(benchmarks))
    spec = importlib.util.spec_from_file_location("lodo", benchmarks / "lodo.py")
    assert spec is not None and spec.loader is not None
    lodo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lodo)

    def point(f1: float, fpr: float) -> dict[str, float]:
        return {"f1": f1, "fpr": fpr}

    scores = {  # point 1 has the most F1 but changes 5% of cscd_ns's correct sentences (cap 6%) and 4% of enc's
        "enc": [point(0.30, 0.02), point(0.35, 0.04)],
        "cscd_ns": [point(0.25, 0.03), point(0.30, 0.05)],
        "dev_split": [point(0.4, 0.02), point(0.45, 0.03)],
    }
    assert lodo.choose(scores, ["cscd_ns", "dev_split"], 0.03, 0.0) == 1  # cscd_ns's 5% is within its cap
    assert lodo.choose(scores, ["enc", "dev_split"], 0.03, 0.0) == 0  # enc's 4% is not within LEMON's
