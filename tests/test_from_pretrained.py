"""``training.bundle.from_pretrained``: a published-style Hugging Face ELECTRA pair (tiny, random, with the
BERT-Base Chinese vocabulary of HFL's checkpoints) becomes a bundle that corrects; bad pairs are refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.test_build import tiny_data

ROOT = Path(__file__).resolve().parents[1]
BERT_VOCAB = SHARED / "vocab" / "bert_base_chinese_vocab.txt"


def hf_pair(root: Path, vocab: Path, generator: bool = True, vocab_size: int | None = None) -> Path:
    """HFL's layout: root/discriminator and root/generator, each save_pretrained with its vocab.txt."""
    torch = pytest.importorskip("torch")
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(0)
    n = sum(1 for _ in vocab.open(encoding="utf-8"))
    cfg = dict(vocab_size=vocab_size or n, embedding_size=16, hidden_size=16, num_hidden_layers=1,
               num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    models = {"discriminator": ElectraForPreTraining(ElectraConfig(**cfg))}
    if generator:
        models["generator"] = ElectraForMaskedLM(ElectraConfig(**cfg))
    for role, model in models.items():
        model.save_pretrained(root / role)
        shutil.copyfile(vocab, root / role / "vocab.txt")
    return root


SLIPS = [("他以经走了", "他已经走了"), ("我门去公园散步", "我们去公园散步"), ("今天天汽很好", "今天天气很好"),
         ("这件事我知到了", "这件事我知道了"), ("我们在北京见面", "我们在北京见面"), ("她的衣服很漂凉", "她的衣服很漂亮"),
         ("明天在见", "明天再见"), ("他是一个好人", "他是一个好人"), ("我想去旅游，但是没有实间", "我想去旅游，但是没有时间"),
         ("请大家安清", "请大家安静"), ("银行的利息很底", "银行的利息很低"), ("我们一起学习中文", "我们一起学习中文")]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The tiny data folder, its dev split (all of sighan_train) made of sound-alike slips, as real ones are."""
    root = tiny_data(tmp_path_factory.mktemp("data") / "data")
    (root / "csc" / "sighan_train.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in SLIPS * 2), encoding="utf-8")
    return root


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "training.bundle.from_pretrained", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=900)


@pytest.mark.slow
def test_a_published_style_pair_becomes_a_bundle_that_corrects(tmp_path: Path, data: Path) -> None:
    if not BERT_VOCAB.is_file():
        pytest.skip("../shared/data/vocab is not beside this checkout")
    from corrector import Corrector

    pair = hf_pair(tmp_path / "electra", BERT_VOCAB)
    out = tmp_path / "bundle"
    res = run("--pretrained", str(pair), "--out", str(out), "--data", str(data))
    assert res.returncode == 0, res.stderr[-3000:]
    fixer = Corrector.load(out, device="cpu")
    assert fixer.vocab[: 5] == BERT_VOCAB.read_text(encoding="utf-8").split("\n")[:5]
    text = "今天天汽很好，我门去公园。"
    assert len(fixer.correct(text).target) == len(text)
    assert fixer.has_lm and fixer.ranker.meta["fitted"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["provenance"]["shape"]["discriminator"]["hidden"] == 16
    assert manifest["vocab_size"] == 21128 and "candidates/candidates.npz" in manifest["files"]
    # scaled to what the pair needs (issue 72, 7): a random pair flags every character, so the floor keeps the
    # ranker's rows and each dev decode to the most suspect 15%; a line per step
    assert manifest["corrector_defaults"]["rtd_floor"] > 0.003
    assert all(f"] {what}" in res.stdout for what in ("loading the pair", "exporting the networks", "the RTD floor",
                                                       "fitting the ranker", "done"))


def test_a_pair_without_a_generator_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "electra" / "discriminator").mkdir(parents=True)
    (tmp_path / "electra" / "discriminator" / "config.json").write_text("{}", encoding="utf-8")
    res = run("--pretrained", str(tmp_path / "electra"), "--out", str(tmp_path / "out"))
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "generator" in res.stderr


@pytest.mark.slow
def test_a_vocabulary_that_does_not_match_the_embeddings_is_refused_in_one_line(tmp_path: Path, data: Path) -> None:
    if not BERT_VOCAB.is_file():
        pytest.skip("../shared/data/vocab is not beside this checkout")
    pair = hf_pair(tmp_path / "electra", BERT_VOCAB, vocab_size=1000)
    res = run("--pretrained", str(pair), "--out", str(tmp_path / "out"), "--data", str(data))
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "vocab.txt has 21128 entries" in res.stderr


RECIPE = ROOT / "training" / "recipes" / "from-pretrained.toml"
TINY = [  # only sizes change, some set where the recipe leaves a module's default: (old, new, how many times)
    ("holdout = 1000  #", "holdout = 5  #", 1),
    ('prune = "0,0,5,8"', 'prune = "0,0,0,0"\nvocab-size = 300', 1),
    ("n = 600000\ndistinct = 200000", "n = 60\ndistinct = 5", 1),
    ("n = 12000", "n = 20", 1),
    ("batch-size = 64", "batch-size = 4\nmax-steps = 3", 1),
    ("eval-every = 1000", "eval-every = 2", 1),
    ("max-changed = 0.10", "max-changed = 1", 1),
    ('choose-on = "{native_dev}"', 'choose-on = "{native_dev}"\nmax-fpr-each = 1', 1),
]


@pytest.mark.slow
def test_the_from_pretrained_recipe_fine_tunes_the_pair_into_a_bundle(tmp_path: Path, data: Path) -> None:
    if not BERT_VOCAB.is_file():
        pytest.skip("../shared/data/vocab is not beside this checkout")
    from corrector import Corrector
    from training import build

    text = RECIPE.read_text(encoding="utf-8")
    for old, new, count in TINY:
        assert text.count(old) == count, old  # from-pretrained.toml changed shape: update TINY
        text = text.replace(old, new)
    recipe = tmp_path / "tiny-from-pretrained.toml"
    recipe.write_text(text, encoding="utf-8")
    pair = hf_pair(tmp_path / "electra", BERT_VOCAB)
    out = tmp_path / "build"
    assert build.main(["--recipe", str(recipe), "--data", str(data), "--out", str(out), "--pretrained", str(pair)]) == 0
    fixer = Corrector.load(out / "bundle", device="cpu")
    text = "今天天汽很好，我门去公园。"
    assert len(fixer.correct(text).target) == len(text)
    assert fixer.vocab[:5] == BERT_VOCAB.read_text(encoding="utf-8").split("\n")[:5]
    assert fixer.has_lm and fixer.ranker.meta["fitted"]
    prov = fixer.bundle.manifest.provenance
    assert prov["init"] == pair.name and prov["finetune"]["config"]["mft_rate"] == 0.2  # machine paths kept out
