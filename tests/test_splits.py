"""training.data.splits: the real training pairs are every real pair file there is (ECSpell's too), less the dev split."""

from __future__ import annotations

from pathlib import Path

from training.data import splits


def write(path: Path, pairs: list[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")


def test_train_pairs_read_every_real_file_and_hold_the_dev_split_out(tmp_path: Path):
    sighan = [(f"他以经走了{i}", f"他已经走了{i}") for i in range(6)]
    write(tmp_path / "csc" / "sighan_train.tsv", sighan)
    write(tmp_path / "csc" / "csc_hard_train.tsv", [("今天天汽好", "今天天气好")])
    write(tmp_path / "csc" / "ecspell_train" / "med.tsv", [("患者需要休西", "患者需要休息")])
    write(tmp_path / "csc" / "ecspell_train" / "law.tsv", [("合同生效", "合同生效"), sighan[0]])
    held = {t for _, t in splits.sighan_holdout(tmp_path, 2)[1]}
    pairs = splits.train_pairs(tmp_path, 2)
    assert ("患者需要休西", "患者需要休息") in pairs and ("合同生效", "合同生效") in pairs
    assert len(pairs) == 4 + 1 + 1 + 2 - (sighan[0][1] in held) and not held & {t for _, t in pairs}
    assert splits.train_pair_files(tmp_path) == ["sighan_train.tsv", "csc_hard_train.tsv", "law.tsv", "med.tsv"]
    assert "患者需要休息" in splits.text_folds(tmp_path, 2)


def test_without_ecspell_the_real_pairs_are_the_two_files(tmp_path: Path):
    write(tmp_path / "csc" / "sighan_train.tsv", [("他以经走了", "他已经走了"), ("我门", "我们")])
    write(tmp_path / "csc" / "csc_hard_train.tsv", [("今天天汽好", "今天天气好")])
    assert splits.train_pair_files(tmp_path) == ["sighan_train.tsv", "csc_hard_train.tsv"]
    assert len(splits.train_pairs(tmp_path, 1)) == 2
