"""In-domain LM lines and their cross-fitting folds (training.evidence.char_lm --in-domain, training.fitting.crossfit)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")  # training extras

from training.data.splits import split_by_fold, text_folds  # noqa: E402
from training.evidence import char_lm as build_lm  # noqa: E402
from training.fitting.crossfit import Folds  # noqa: E402


def write_pairs(path: Path, targets: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # each source has one wrong character (the first), so every line is a usable pair
    path.write_text("".join(f"错{t[1:]}\t{t}\n" for t in targets), encoding="utf-8")


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    write_pairs(tmp_path / "csc/sighan_train.tsv", [f"我们第{i}天去公园" for i in range(10)])
    write_pairs(tmp_path / "csc/csc_hard_train.tsv", [f"他们第{i}年在北京" for i in range(5)])
    return tmp_path


def test_folds_are_contiguous_blocks_of_each_file(data: Path) -> None:
    fold_of = text_folds(data, 5)
    assert [fold_of[f"我们第{i}天去公园"] for i in range(10)] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert [fold_of[f"他们第{i}年在北京"] for i in range(5)] == [0, 1, 2, 3, 4]
    pairs = [("x", "他们第4年在北京"), ("y", "我们第0天去公园"), ("z", "not in any file")]
    assert split_by_fold(pairs, fold_of, 5) == [[1, 2], [], [], [], [0]]


def test_in_domain_lines_leave_out_one_fold(data: Path) -> None:
    every = build_lm.in_domain_lines(data, holdout=0)
    assert len(every) == 15 and "我们第3天去公园" in every
    without1 = build_lm.in_domain_lines(data, holdout=0, folds=5, without_fold=1)
    assert set(every) - set(without1) == {"我们第2天去公园", "我们第3天去公园", "他们第1年在北京"}


def test_in_domain_lines_count_as_repeated_corpus_lines(tmp_path: Path) -> None:
    import gzip

    lines = ["今天天气很好我们去公园", "明天下雨我们在家看书"] * 20
    extra = ["甚么时候去公园"]
    plain, mixed = tmp_path / "plain", tmp_path / "mixed"
    plain.mkdir()
    mixed.mkdir()
    with gzip.open(plain / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines + extra * 3) + "\n")
    with gzip.open(mixed / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    a = build_lm.Variant(tmp_path / "lm_plain", 3, "kn", [0, 0, 0], 0)
    b = build_lm.Variant(tmp_path / "lm_mixed", 3, "kn", [0, 0, 0], 0)
    build_lm.build(plain, [a], vocab_size=50, holdout_every=0)
    meta = build_lm.build(mixed, [b], vocab_size=50, holdout_every=0, in_domain=extra, in_domain_weight=3)[0]
    assert meta["in_domain"]["lines"] == 1 and meta["in_domain"]["weight"] == 3
    for name in ("table.npy", "unigram_logprob.npy"):
        assert np.array_equal(np.load(a.out / name), np.load(b.out / name))


def test_folds_map_puts_each_fold_back_in_order() -> None:
    fold_of = {"a": 1, "b": 0, "c": 1}
    folds = Folds(["fix0", "fix1"], fold_of)  # type: ignore[list-item]  # map only hands them to fn
    pairs = [("1", "a"), ("2", "b"), ("3", "c")]
    out = folds.map(pairs, lambda fix, ps: [f"{fix}:{s}" for s, _ in ps])
    assert out == ["fix1:1", "fix0:2", "fix1:3"]
    assert [(f, [s for s, _ in ps]) for f, ps in folds.groups(pairs)] == [("fix0", ["2"]), ("fix1", ["1", "3"])]


def test_fold_lms_are_the_lms_counted_without_their_fold(data: Path, tmp_path: Path) -> None:
    """--in-domain-folds takes each fold's lines out of one count: the same model as counting without them (the
    corpus has every character, so both have one vocabulary)."""
    import gzip

    from corrector.evidence.char_lm import CharLM

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with gzip.open(corpus / "a.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(["今天我们去公园散步", "他们第一年在北京工作", "明天下雨我们在家看书"] * 10 + ["0123456789"]) + "\n")
    common = ["--corpus", str(corpus), "--order", "3", "--prune", "0,0,0", "--quant", "0", "--vocab-size", "200",
              "--holdout-every", "0"]
    assert build_lm.main([*common, "--out", str(tmp_path / "lm"), "--in-domain", str(data), "--in-domain-weight",
                          "3", "--in-domain-holdout", "0", "--in-domain-folds", "5", "--fold-out",
                          str(tmp_path / "folds")]) == 0
    texts = ["我们第2天去公园", "他们第1年在北京", "今天下雨我们去公园", "第3天"]
    for k in (0, 1, 4):
        lines = build_lm.in_domain_lines(data, holdout=0, folds=5, without_fold=k)
        ref = build_lm.Variant(tmp_path / f"ref{k}", 3, "kn", [0, 0, 0], 0)
        build_lm.build(corpus, [ref], vocab_size=200, holdout_every=0, in_domain=lines, in_domain_weight=3)
        fold, want = CharLM.load(tmp_path / "folds" / f"fold{k}"), CharLM.load(ref.out)
        for t in texts:
            assert fold.sentence_logprob(t) == pytest.approx(want.sentence_logprob(t), abs=1e-4)
        meta = json.loads((tmp_path / "folds" / f"fold{k}" / "meta.json").read_text(encoding="utf-8"))
        assert meta["in_domain"]["fold"] == [k, 5] and meta["in_domain"]["lines"] == len(lines)
        assert meta["train_tokens"] == json.loads((ref.out / "meta.json").read_text(encoding="utf-8"))["train_tokens"]
    whole = CharLM.load(tmp_path / "lm")
    assert whole.sentence_logprob(texts[0]) > fold.sentence_logprob(texts[0])  # fold 4 lacks 我们第8/9天: less sure


def test_dev_split_file_is_the_held_out_pairs_then_their_targets(data: Path, tmp_path: Path) -> None:
    from training.data import splits

    out = tmp_path / "dev_split.tsv"
    assert splits.main(["--data", str(data), "--out", str(out), "--holdout", "3"]) == 0
    lines = [tuple(x.split("\t")) for x in out.read_text(encoding="utf-8").splitlines()]
    assert lines == splits.dev_pairs(data, 3) and len(lines) == 6
    assert all(s != t for s, t in lines[:3]) and all(s == t for s, t in lines[3:])
    assert {t for _, t in lines[:3]} == {t for _, t in lines[3:]}


def test_folds_over_a_corrector_share_its_sessions(tiny_bundle, tiny_lm, data: Path, tmp_path: Path) -> None:
    """training.fitting.fit --fit-lm-folds moves its Corrector to each fold LM: the same decoding as Folds.load,
    on the Corrector's own ONNX sessions."""
    from corrector import Corrector

    lm_folds = tmp_path / "folds"
    lm_folds.mkdir()
    for k in (0, 1):
        (lm_folds / f"fold{k}").symlink_to(tiny_lm, target_is_directory=True)
    fix = Corrector.load(tiny_bundle, device="cpu", threshold=0.0)
    over = Folds.over(fix, lm_folds, data)
    loaded = Folds.load(tiny_bundle, lm_folds, data, threshold=0.0)
    assert all(f.networks is fix.networks and f.has_lm for f in over.fixes)
    assert loaded.fixes[1].networks is loaded.fixes[0].networks
    pairs = [(t, t) for t in ("我们第1天去公园", "他们第3年在北京", "我们第8天去公园")]

    def decode(f: Corrector, ps: list[tuple[str, str]]) -> list[str]:
        return [c.target for c in f.correct_batch([s for s, _ in ps])]

    assert over.map(pairs, decode) == loaded.map(pairs, decode)
    assert [f.evidence.lm.path for f in over.fixes] == [lm_folds / "fold0", lm_folds / "fold1"]
    assert [f.evidence.lm.path for f in loaded.fixes] == [lm_folds / "fold0", lm_folds / "fold1"]


def test_reliability_scores_dev_with_the_folds(tiny_bundle, tiny_lm, data: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """training.fitting.reliability --fit-lm-folds scores dev as the calibration was fitted (each pair with its
    fold's LM); without the folds, or on --pairs (not the training data's dev split), the bundle's LM."""
    from training.fitting import reliability

    lm_folds = tmp_path / "folds"
    lm_folds.mkdir()
    for k in (0, 1):
        (lm_folds / f"fold{k}").symlink_to(tiny_lm, target_is_directory=True)
    seen: list[tuple[object, list]] = []
    monkeypatch.setattr(reliability, "reliability", lambda fix, pairs, png: seen.append((fix, pairs)) or [])
    base = ["--model", str(tiny_bundle), "--data", str(data), "--holdout", "3"]
    reliability.main(base + ["--fit-lm-folds", str(lm_folds)])
    reliability.main(base)
    other = tmp_path / "other.tsv"
    other.write_text("我们第1天去公圆\t我们第1天去公园\n", encoding="utf-8")
    reliability.main(base + ["--fit-lm-folds", str(lm_folds), "--pairs", str(other)])
    (folds, dev), (plain, dev_again), (on_pairs, pairs) = seen
    assert isinstance(folds, Folds) and [f.evidence.lm.path for f in folds.fixes] == [lm_folds / "fold0",
                                                                                      lm_folds / "fold1"]
    assert not isinstance(plain, Folds) and not isinstance(on_pairs, Folds)
    assert dev == dev_again and len(dev) == 6 and pairs == [("我们第1天去公圆", "我们第1天去公园")]


def test_check_train_finds_dev_pairs_in_a_training_file(data: Path, tmp_path: Path, capsys) -> None:
    """python -m training.data.splits --check-train: 0 for a file without the dev split, 1 naming the count with it."""
    from training.data import splits

    rest, held = splits.sighan_holdout(data, 3)
    clean = tmp_path / "clean.tsv"
    clean.write_text("".join(f"{s}\t{t}\n" for s, t in rest), encoding="utf-8")
    leaky = tmp_path / "leaky.tsv"
    leaky.write_text("".join(f"{s}\t{t}\n" for s, t in rest + held[:2]), encoding="utf-8")
    assert splits.leaked_pairs(data, clean, 3) == 0 and splits.leaked_pairs(data, leaky, 3) == 2
    assert splits.main(["--data", str(data), "--holdout", "3", "--check-train", str(clean)]) == 0
    assert splits.main(["--data", str(data), "--holdout", "3", "--check-train", str(leaky)]) == 1
    assert "2 of the dev split's 3 held-out pairs" in capsys.readouterr().err


def test_count_folds_are_the_tables_counted_without_their_fold(tiny_bundle, data: Path, tmp_path: Path) -> None:
    """training.evidence.candidates --folds K: fold k's table counts every training pair but fold k's (the folds of the LM),
    and nothing else differs from a table built from those pairs alone."""
    import numpy as np

    from corrector.evidence.candidates import CandidateTable
    from training.data.splits import train_pairs
    from training.evidence import candidates

    sim, counts = tiny_bundle / "similarity", tmp_path / "counts"
    candidates.main(["--similarity", str(sim), "--data", str(data), "--out", str(counts), "--folds", "5",
                     "--holdout", "0"])
    whole = CandidateTable.load(candidates.build(sim, data, tmp_path / "whole", holdout=0) and tmp_path / "whole")
    fold1 = CandidateTable.load(counts / "fold1")
    # 错 is written for 我 ten times and for 他 five; fold 1 holds 我们第2天, 我们第3天 and 他们第1年
    assert [whole.pair("错", c)[2] for c in "我他"] == [10, 5]  # type: ignore[index]
    assert [fold1.pair("错", c)[2] for c in "我他"] == [8, 4]  # type: ignore[index]
    assert whole.written_count("错") == 15 and fold1.written_count("错") == 12
    fold_of = text_folds(data, 5)
    rest = [p for p in train_pairs(data, 0) if fold_of[p[1]] != 1]
    candidates.build(sim, data, tmp_path / "rest", holdout=0, pairs=rest)
    for name in ("candidates.npz", "bigrams.npz", "words.npz"):
        a, b = np.load(counts / "fold1" / name), np.load(tmp_path / "rest" / name)
        assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
    assert json.loads((counts / "folds.json").read_text(encoding="utf-8"))["per_fold"][1] == {
        "fold": 1, "pairs_counted": 12, "left_out": 3}


def test_folds_over_count_tables_read_their_folds_counts(tiny_bundle, tiny_lm, data: Path, tmp_path: Path) -> None:
    """Folds.over with count folds: each fold's Corrector reads its own table (with LM folds too, its own LM), on
    the same ONNX sessions; the ranker's rows of a pair in fold k then carry fold k's counts, without any
    leave-one-out."""
    import math

    from corrector import Corrector
    from corrector.features import COL
    from training.evidence import candidates
    from training.fitting.table import extract_cheap

    counts, lm_folds = tmp_path / "counts", tmp_path / "lms"
    candidates.build_folds(tiny_bundle / "similarity", data, counts, 2, holdout=0)
    lm_folds.mkdir()
    for k in (0, 1):
        (lm_folds / f"fold{k}").symlink_to(tiny_lm, target_is_directory=True)
    fix = Corrector.load(tiny_bundle, device="cpu")
    only_counts = Folds.over(fix, None, data, counts)
    both = Folds.load(tiny_bundle, lm_folds, data, count_folds=counts)
    assert all(f.networks is fix.networks and not f.has_lm for f in only_counts.fixes)
    assert all(f.evidence.dictionary is fix.evidence.dictionary for f in only_counts.fixes)  # the bundle's words
    assert [f.evidence.lm.path for f in both.fixes] == [lm_folds / "fold0", lm_folds / "fold1"]
    # fold 0 holds 我们第0-4天 and 他们第0-2年: its table counts 错→我 5 times and 错→他 twice
    assert [f.evidence.table.pair("错", "我")[2] for f in both.fixes] == [5, 5]  # type: ignore[index]
    assert [f.evidence.table.pair("错", "他")[2] for f in only_counts.fixes] == [2, 3]  # type: ignore[index]
    pair = [("错们第0天去公园", "我们第0天去公园")]  # fold 0
    t = extract_cheap(only_counts.fixes[0], pair, leave_one_out=False)
    assert t.X[t.label, COL["confusions"]].tolist() == pytest.approx([math.log1p(5)])
    with pytest.raises(SystemExit, match="2 LM folds but"):
        candidates.build_folds(tiny_bundle / "similarity", data, tmp_path / "three", 3, holdout=0)
        Folds.over(fix, lm_folds, data, tmp_path / "three")


def test_hold_out_fold_keeps_every_target_of_the_fold_out_of_the_training_file(data: Path, tmp_path: Path) -> None:
    """python -m training.data.splits --hold-out-fold K/N: the fold's real training pairs go to --out, and the
    training file loses every pair whose target is one of theirs (a repeat, a clean copy), nothing else."""
    from training.data import splits

    real = splits.train_pairs(data, 3)
    fold_of = splits.text_folds(data, 2)
    held_t = {t for _, t in real if fold_of[t] == 1}
    assert held_t and len(held_t) < len(real)
    other = ("今天天汽很好", "今天天气很好")
    train = tmp_path / "train.tsv"
    train.write_text("".join(f"{s}\t{t}\n" for s, t in real * 2 + [(t, t) for t in held_t] + [other]),
                     encoding="utf-8")
    out, rest = tmp_path / "held.tsv", tmp_path / "rest.tsv"
    assert splits.main(["--data", str(data), "--holdout", "3", "--hold-out-fold", "1/2", "--train-file", str(train),
                        "--out-train", str(rest), "--out", str(out)]) == 0
    held = [tuple(line.split("\t")) for line in out.read_text(encoding="utf-8").splitlines()]
    kept = [tuple(line.split("\t")) for line in rest.read_text(encoding="utf-8").splitlines()]
    assert {t for _, t in held} == held_t and all(p in real for p in held)
    assert not {t for _, t in kept} & held_t
    assert other in kept and len(kept) == 2 * sum(t not in held_t for _, t in real) + 1
