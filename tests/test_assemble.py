"""Assembling the data folder from its sources (training/data/assemble.py), on a small local mirror of git
repositories; and the one line a command prints when a data file is missing. Before: nothing said where
../shared/data comes from."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from training.data.assemble import Contamination, clean, keep_text, load_sources, main

EVAL = ["我们明天在学校门口见面好吗", "今天天气很好我们去公园散步吧"]  # targets of the evaluation pairs


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def repo(mirror: Path, name: str, files: dict[str, str], later: dict[str, str] | None = None) -> str:
    """A repository of ``files`` in ``mirror``; its commit (a later commit with ``later`` is never read)."""
    root = mirror / name
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git("init", "-q", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "data", cwd=root)
    pinned = git("rev-parse", "HEAD", cwd=root)
    for rel, text in (later or {}).items():
        (root / rel).write_text(text, encoding="utf-8")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "later", cwd=root)
    return pinned


@pytest.fixture
def mirror(tmp_path: Path) -> tuple[Path, Path]:
    m = tmp_path / "mirror"
    test = "\n".join(f"1\t{t[:5]}在{t[6:]}\t{t}" for t in EVAL) + "\n0\t短句\t短句\n"  # a pair of unequal length: none
    ecspell = repo(m, "org/ecspell", {
        "test2015.txt": test.replace("0\t短句\t短句", "0\t一二三\t一二"),
        "train.txt": (f"1\t他以经走了\t他已经走了\n1\t他以经走了\t他已经走了\n"  # a duplicate
                      f"0\t我说{EVAL[0]}\t我说{EVAL[0]}\n"),  # contains an evaluation sentence
    }, later={"test2015.txt": "1\t改了\t改了\n"})
    lemon = repo(m, "org/lemon", {"enc.txt": "天 汽 很 好\t天 气 很 好\n多 一 字\t多 字\n"})
    texts = repo(m, "org/texts", {
        "docs/a.md": "---\ntitle: x\n---\n# 第一章 标题\n\n这是一个**很长的**段落，讲的是模型如何纠正[拼写](http://x)错误。\n"
                     "```\n代码块里的中文不要收进来的内容\n```\n| 表格 | 第二列的中文内容在这里 |\n|---|---|\n",
        "docs/README.md": "这个自述文件的内容不应该被收进来哦。\n",
        "feeds/x.json": json.dumps({"items": [{"content_html": "<p>第一段新闻的正文内容在这里。</p><p>第二段新闻&amp;正文也在这里。</p>"},
                                              {"content_html": f"<p>报道说{EVAL[1]}。</p>"}]}, ensure_ascii=False),
        "t.tsv": "label\ttext_a\n1\t这家酒店的服务非常好值得推荐\n0\t太短了\n1\t這個酒店的環境很差勁不會再來\n",
    })
    sources = m / "sources.toml"
    sources.write_text(f'''
[[file]]
out = "csc/sighan15_test.tsv"
role = "development benchmark"
repo = "org/ecspell"
commit = "{ecspell}"
paths = ["test2015.txt"]
reader = "labelled"

[[file]]
out = "csc/lemon_dev/enc.tsv"
role = "development"
repo = "org/lemon"
commit = "{lemon}"
paths = ["enc.txt"]
reader = "spaced"

[[file]]
out = "csc/sighan_train.tsv"
role = "training"
repo = "org/ecspell"
commit = "{ecspell}"
paths = ["train.txt"]
reader = "labelled"

[[file]]
out = "corpus/docs.txt.gz"
repo = "org/texts"
commit = "{texts}"
paths = ["docs/*.md"]
exclude = ["docs/README.md"]
reader = "markdown"

[[file]]
out = "corpus/docs.txt.gz"
repo = "org/texts"
commit = "{texts}"
paths = ["feeds/*.json"]
reader = "html_json"
field = "items[].content_html"

[[file]]
out = "corpus/reviews.txt.gz"
repo = "org/texts"
commit = "{texts}"
paths = ["t.tsv"]
reader = "tsv"
column = "text_a"
''', encoding="utf-8")
    return m, sources


def test_the_folder_is_assembled_at_the_pinned_commits(mirror, tmp_path, capsys):
    m, sources = mirror
    out = tmp_path / "data"
    main(["--out", str(out), "--sources", str(sources), "--mirror", m.as_uri()])
    test = (out / "csc" / "sighan15_test.tsv").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[1] for line in test] == EVAL  # the pinned commit's pairs, unequal lengths dropped
    assert (out / "csc" / "lemon_dev" / "enc.tsv").read_text(encoding="utf-8") == "天汽很好\t天气很好\n"
    assert (out / "csc" / "sighan_train.tsv").read_text(encoding="utf-8") == "他以经走了\t他已经走了\n"
    docs = gzip.decompress((out / "corpus" / "docs.txt.gz").read_bytes()).decode().splitlines()
    assert docs == ["这是一个很长的段落，讲的是模型如何纠正拼写错误。", "表格 第二列的中文内容在这里",  # no code, no README
                    "第一段新闻的正文内容在这里。", "第二段新闻&正文也在这里。"]  # the contaminated line dropped
    reviews = gzip.decompress((out / "corpus" / "reviews.txt.gz").read_bytes()).decode().splitlines()
    assert reviews == ["这家酒店的服务非常好值得推荐"]  # too short and traditional-dominant lines dropped
    again = tmp_path / "again"
    main(["--out", str(again), "--sources", str(sources), "--mirror", m.as_uri(), "--only", "corpus/"])
    assert (again / "corpus" / "docs.txt.gz").read_bytes() == (out / "corpus" / "docs.txt.gz").read_bytes()
    assert not (again / "csc").exists()  # --only: the evaluation sets are read for decontamination, not written
    fetched = capsys.readouterr().err
    assert re.search(r"^fetched org/ecspell@[0-9a-f]{12}: \d+\.\d MB$", fetched, re.M), fetched  # each fetch's size
    for repo in (out / ".sources").glob("*/*"):  # the pinned commit alone, without history
        assert subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "HEAD"], capture_output=True,
                              text=True).stdout.strip() == "1"


def test_a_fetch_that_fails_is_one_line(mirror, tmp_path):
    m, sources = mirror
    done = subprocess.run([sys.executable, "-m", "training.data.assemble", "--out", str(tmp_path / "d"),
                           "--sources", str(sources), "--mirror", (tmp_path / "nowhere").as_uri()],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith("error: cannot fetch org/ecspell")
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_shipped_sources_name_every_evaluation_set_with_a_commit():
    entries = load_sources()
    outs = {e["out"] for e in entries}
    assert {"csc/sighan15_test.tsv", "csc/wang271k_dev.tsv", "csc/sighan_train.tsv"} <= outs
    assert {f"csc/lemon_dev/{d}.tsv" for d in ("enc", "mec", "cot", "gam")} <= outs
    assert all(len(e["commit"]) == 40 for e in entries)


def test_cleaning_and_decontamination_rules():
    assert clean("<p>a&amp;b\u200b  c\u3000d</p>") == "a&b c d"
    assert not keep_text("只有七个汉字啊") and keep_text("这一行有足够多的汉字了吧")
    assert not keep_text("這個說法們會來時後國") and not keep_text("ひらがなカタカナの文章です日本語")
    found = Contamination(["今天天气很好我们去公园", "短句子"])
    assert found("他说：今天天气很好 我们去公园！") and not found("今天天气很好，我们去公园") and not found("今天天气不好") and not found("短句子")


def test_a_missing_data_file_is_one_line_naming_how_to_get_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "training.fitting.evaluate", "--data",
                           str(tmp_path / "data" / "csc" / "sighan15_test.tsv")], capture_output=True, text=True)
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert "missing" in line and f"python -m training.data.assemble --out {tmp_path / 'data'}" in line


def test_list_needs_no_out(capsys):
    """Before: ``--list`` (which writes nothing) refused to run without ``--out``."""
    from training.data import assemble

    assemble.main(["--list", "--only", "csc/sighan15_test"])
    out = capsys.readouterr().out
    assert out.startswith("csc/sighan15_test.tsv\thttps://github.com/aopolin-lv/ECSpell@")
    with pytest.raises(SystemExit) as done:
        assemble.main(["--only", "csc/"])  # writing still needs it
    assert done.value.code == 2 and "--out is required" in capsys.readouterr().err
