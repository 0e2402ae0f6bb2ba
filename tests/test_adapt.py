"""``corrector adapt``: the interpolated LM, its weight, the domain's words and the adapted bundle."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corrector.adapt.domain_words import new_words
from corrector.adapt.interpolate import adapt, best_weight, window_logprobs
from corrector.evidence.char_lm import BOS, PAD, CharLM
from tests.conftest import LM_SENTENCES

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = ["甲方应当在合同签订之日起十日内付款", "乙方收到款项后三日内交付货物", "柏瑞泽公司是甲方的代理人",
          "合同自双方签字之日起生效", "柏瑞泽公司负责售后服务"]


def domain_lines(n: int = 120) -> list[str]:
    rng = random.Random(1)
    return ["，".join(rng.sample(DOMAIN, 2)) + "，" + rng.choice(LM_SENTENCES) for _ in range(n)]


def every_window(lm: CharLM, contexts: list[list[int]]) -> np.ndarray:
    """Every id (but <s>) after each context, as (len(contexts) * (V-1), order) windows."""
    ids = np.array([i for i in range(lm.vocab_size) if i != BOS], dtype=np.int32)
    rows = []
    for ctx in contexts:
        w = np.full((ids.size, lm.order), PAD, dtype=np.int32)
        w[:, lm.order - 1 - len(ctx): lm.order - 1] = ctx
        w[:, -1] = ids
        rows.append(w)
    return np.concatenate(rows)


@pytest.fixture(scope="module")
def mixed(tiny_lm: Path, tmp_path_factory) -> tuple[CharLM, CharLM, CharLM]:
    """(base, the text's model alone (weight 1), the interpolation at 0.3), all unquantised."""
    d = tmp_path_factory.mktemp("mix")
    lines = domain_lines()
    adapt(lines, tiny_lm, d / "alone", [0, 0, 0], holdout_every=0, weight=1.0, log=lambda m: None)
    adapt(lines, tiny_lm, d / "mixed", [0, 0, 0], holdout_every=0, weight=0.3, log=lambda m: None)
    return CharLM.load(tiny_lm), CharLM.load(d / "alone"), CharLM.load(d / "mixed")


def test_interpolation_is_the_mixture_wherever_either_model_stores_the_ngram(mixed) -> None:
    base, alone, mix = mixed
    stored = [ids for k, (ids, _, _) in mix.stored_ngrams().items() if k > 1]
    win = np.concatenate([np.concatenate((np.full((s.shape[0], mix.order - s.shape[1]), PAD, dtype=np.int32), s),
                                         axis=1) for s in stored])
    want = 0.3 * np.exp(window_logprobs(alone, win)) + 0.7 * np.exp(window_logprobs(base, win))
    np.testing.assert_allclose(np.exp(window_logprobs(mix, win)), want, rtol=1e-4)
    assert mix.entry(mix.encode("柏瑞泽")) is not None and base.entry(base.encode("柏瑞")) is None


def test_every_context_of_the_interpolation_sums_to_one(mixed) -> None:
    base, _, mix = mixed
    contexts = [[BOS], list(mix.encode("甲方")), list(mix.encode("天气")), list(mix.encode("柏瑞")), [], [BOS, 5]]
    totals = np.exp(window_logprobs(mix, every_window(mix, contexts))).reshape(len(contexts), -1).sum(1)
    np.testing.assert_allclose(totals, 1.0, atol=1e-4)


def test_weight_zero_gives_the_base_model(tiny_lm: Path, tmp_path: Path) -> None:
    adapt(domain_lines(), tiny_lm, tmp_path / "zero", [0, 0, 0], holdout_every=0, weight=0.0, log=lambda m: None)
    base, zero = CharLM.load(tiny_lm), CharLM.load(tmp_path / "zero")
    win = every_window(base, [[BOS], list(base.encode("天气")), list(base.encode("甲方"))])
    np.testing.assert_allclose(window_logprobs(zero, win), window_logprobs(base, win), atol=1e-4)


def test_weight_is_the_maximum_likelihood_mixture() -> None:
    # three tokens the text's model gives 0.8 (the base 0.2), one the other way round:
    # argmax 3 ln(0.2 + 0.6 λ) + ln(0.8 - 0.6 λ) = (0.8 * 3 - 0.2) / (0.6 * 4)
    lp_text = np.log([0.8, 0.8, 0.8, 0.2])
    lp_base = np.log([0.2, 0.2, 0.2, 0.8])
    assert best_weight(lp_text, lp_base) == pytest.approx(2.2 / 2.4, abs=1e-4)
    assert best_weight(lp_base, lp_base) == pytest.approx(0.5)  # no evidence either way: where EM starts


def test_held_out_weight_prefers_the_text_model_on_its_own_domain(tiny_lm: Path, tmp_path: Path) -> None:
    facts = adapt(domain_lines(), tiny_lm, tmp_path / "lm", [0, 0, 0], holdout_every=5, log=lambda m: None)
    assert 0.5 < facts["weight"] <= 0.95
    assert facts["heldout_perplexity_interpolated"] < facts["heldout_perplexity_base"]
    meta = json.loads((tmp_path / "lm" / "meta.json").read_text(encoding="utf-8"))
    assert meta["adapted"]["weight"] == facts["weight"] and meta["order"] == 3


def test_domain_words_are_frequent_cohesive_and_new() -> None:
    lines = ["这是柏瑞泽公司的新产品", "这是我们的柏瑞泽", "柏瑞泽很好，这是真的"] * 4 + ["这是一个例子"] * 30
    words = dict(new_words(lines, min_count=5))
    assert words.get("柏瑞泽") == 12
    assert "这是" not in words  # jieba's HMM may join it, but it is no word: it does not hold together
    assert not new_words(lines[:3], min_count=5)


def test_domain_words_are_kept_as_written(fake_forced) -> None:
    text = "今天天气很好"
    edited = fake_forced.correct(text)
    assert {e.position for e in edited.edits} & {2, 3}, "the forced corrector edits every character"
    kept = fake_forced.with_domain_words(["天气"]).correct(text)
    assert not {e.position for e in kept.edits} & {2, 3}
    again = fake_forced.with_domain_words(["天气"]).correct(text, protect_domain_words=False)
    assert {e.position for e in again.edits} & {2, 3}


def test_adapt_command_writes_a_bundle_that_loads(tiny_bundle: Path, tiny_lm: Path, tmp_path: Path) -> None:
    from corrector import Corrector
    from training.bundle.export import Evidence, update_bundle

    base = Path(shutil.copytree(tiny_bundle, tmp_path / "base"))
    update_bundle(base, Evidence(lm=tiny_lm))
    text = tmp_path / "text"
    text.mkdir()
    (text / "a.md").write_text("\n".join(domain_lines(60)) + "\n", encoding="utf-8")
    (text / "b.jsonl").write_text("\n".join(json.dumps({"text": x}, ensure_ascii=False) for x in domain_lines(40))
                                  + "\n", encoding="utf-8")
    out = tmp_path / "adapted"
    run = subprocess.run([sys.executable, "-m", "corrector", "adapt", "--text", str(text), "--out", str(out),
                          "--model", str(base), "--min-count", "3"], capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    assert "weight" in run.stderr and "threshold" in run.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    facts = manifest["provenance"]["adapted"]
    assert facts["text"]["lines"] == 100 and len(facts["text"]["sha256"]) == 64
    assert 0 < facts["lm"]["weight"] < 1 and manifest["lm"]["adapted"] == facts["lm"]
    assert "dictionary/domain_words.txt" in manifest["files"] and "lm/meta.json" in manifest["files"]
    assert "柏瑞泽" in (out / "dictionary" / "domain_words.txt").read_text(encoding="utf-8").split()
    fixer = Corrector.load(out, device="cpu")
    assert fixer.threshold() == facts["threshold"]["adapted"]
    assert fixer.correct("柏瑞泽公司").target == "柏瑞泽公司"


def test_adapt_command_refuses_missing_text_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "corrector", "adapt", "--text", str(tmp_path / "nothing"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode != 0
    assert len(run.stderr.strip().splitlines()) == 1 and "nothing" in run.stderr


def test_threshold_is_the_lowest_that_changes_fewer_held_out_lines() -> None:
    from corrector.adapt.adapted_bundle import choose_threshold

    grid = [0.3, 0.4, 0.5, 0.6, 0.7]
    assert choose_threshold(3, [5, 3, 2, 2, 0], grid) == 0.5  # one fewer than the base bundle's 3
    assert choose_threshold(0, [2, 1, 0, 0, 0], grid) == 0.5  # the base changes none: none
    assert choose_threshold(1, [4, 3, 2, 2, 1], grid) == 0.7  # none passes: the highest tried


def test_the_text_read_can_be_capped(tmp_path: Path) -> None:
    """Before: adapt had no way to cap its input (issue 72, 8). The first lines are taken, never one past a cap."""
    from corrector.adapt.adapted_bundle import read_texts

    (tmp_path / "a.txt").write_text("一二三\n\n四五\n六七八九\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("十\n", encoding="utf-8")
    spec = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    assert read_texts(spec)[0] == ["一二三", "四五", "六七八九", "十"]
    assert read_texts(spec, max_lines=2)[0] == ["一二三", "四五"]
    assert read_texts(spec, max_chars=8)[0] == ["一二三", "四五"]  # 六七八九 would make 9
    assert read_texts(spec, max_chars=9)[0] == ["一二三", "四五", "六七八九"]
    assert read_texts(spec, max_chars=10)[0] == ["一二三", "四五", "六七八九", "十"]
    run = subprocess.run([sys.executable, "-m", "corrector", "adapt", "--text", spec[0], "--out", str(tmp_path / "o"),
                          "--max-chars", "1"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode != 0 and run.stderr.strip() == "--max-chars must be at least 2"


def test_a_long_step_says_so_while_it_runs(capsys) -> None:
    """Before: over five minutes without a line between two steps on a 5.4M-character text (issue 72, 8)."""
    import time

    from corrector.adapt.adapted_bundle import _Steps

    steps = _Steps(every=0.05)
    try:
        steps("the text's model over all 9 lines, interpolated")
        time.sleep(0.3)
    finally:
        steps.close()
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "the text's model over all 9 lines, interpolated"
    assert len(err) >= 3 and all(line.startswith("  ... the text's model over all 9 lines, interpolated: ")
                                 and line.endswith(" s so far") for line in err[1:])
