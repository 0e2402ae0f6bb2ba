"""``python -m corrector`` run as a user runs it: a subprocess, checked on stdout, stderr and exit code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SAMPLE

from corrector import Corrector

REPO = Path(__file__).resolve().parents[1]
LINES = ["今天天汽很好", "", "我们去公园散步吧，hello world 😀", "", "", "中国人民银行在北京", "龘"]
EDIT_KEYS = {"position", "source", "target", "confidence", "reason"}


@dataclass
class Run:
    code: int
    out: str
    err: str


def cli(*args: str | Path, stdin: bytes | str | None = None, env: dict | None = None) -> Run:
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [sys.executable, "-m", "corrector", *map(str, args)], input=data, capture_output=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=120,
    )
    return Run(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace"))


def ok(r: Run) -> str:
    assert r.code == 0, r.err
    assert r.err == ""  # no progress bar or log noise when stderr is not a terminal
    return r.out


def failed(r: Run, *words: str) -> str:
    """Exit code != 0, exactly one line on stderr starting with 'error:', no traceback."""
    assert r.code != 0
    assert "Traceback" not in r.err
    lines = r.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: "), r.err
    for w in words:
        assert w in lines[0]
    return lines[0]


def expected_lines(fix: Corrector, lines: list[str], **kw) -> str:
    return "".join(c.target + "\n" for c in fix.correct_batch(lines, **kw))


# ---- correcting ---------------------------------------------------------------------------------


def test_argument_mode(model, forced):
    out = ok(cli("今天天汽很好", *model))
    assert out == forced.correct("今天天汽很好").target + "\n"
    assert out != "今天天汽很好\n"


def test_argument_mode_default_settings(tiny_bundle, tiny_corrector):
    out = ok(cli("今天天汽很好hello", "--model", tiny_bundle, "--device", "cpu"))
    assert out == tiny_corrector.correct("今天天汽很好hello").target + "\n"


def test_precision_flag(tiny_bundle, forced_bundle, tmp_path):
    int8 = Corrector.load(forced_bundle, device="cpu", precision="int8")
    out = ok(cli("今天天汽很好", "--model", forced_bundle, "--device", "cpu", "--precision", "int8"))
    assert out == int8.correct("今天天汽很好").target + "\n"
    bare = Path(shutil.copytree(tiny_bundle, tmp_path / "no-int8"))
    for name in ("discriminator", "generator"):
        (bare / f"onnx/{name}.int8.onnx").unlink()
    manifest = json.loads((bare / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"] = [f for f in manifest["files"] if ".int8." not in f]
    (bare / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    failed(cli("今天", "--model", bare, "--device", "cpu", "--precision", "int8"), "no int8 ONNX")
    ok(cli("今天", "--model", bare, "--device", "cpu"))


def test_input_file(model, forced, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    out = ok(cli("--input", src, *model))
    assert out == expected_lines(forced, LINES)
    assert out.split("\n")[:-1][1] == "" and len(out.split("\n")) - 1 == len(LINES)


def test_input_file_without_final_newline(model, forced, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("今天\n\n好", encoding="utf-8")
    assert ok(cli("-i", src, *model)) == expected_lines(forced, ["今天", "", "好"])


def test_empty_input_file(model, tmp_path):
    src = tmp_path / "empty.txt"
    src.write_bytes(b"")
    assert ok(cli("--input", src, *model)) == ""


@pytest.mark.parametrize("how", [["--input", "-"], []])
def test_stdin(model, forced, how):
    out = ok(cli(*how, *model, stdin="\n".join(LINES) + "\n"))
    assert out == expected_lines(forced, LINES)


def test_output_file(model, forced, tmp_path):
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert ok(cli("--input", src, "--output", dst, *model)) == ""
    assert dst.read_text(encoding="utf-8") == expected_lines(forced, LINES)
    assert ok(cli("今天天汽很好", "-o", dst, *model)) == ""
    assert dst.read_text(encoding="utf-8") == forced.correct("今天天汽很好").target + "\n"


def test_threshold_one_returns_input_byte_for_byte(model, tmp_path):
    src, dst = tmp_path / "in.txt", tmp_path / "out.txt"
    raw = "今天天汽很好\r\n\r\n  中国人民银行\t😀\r\n".encode()
    src.write_bytes(raw)
    ok(cli("--input", src, "--output", dst, "--threshold", "1.0", *model))
    assert dst.read_bytes() == raw


def test_file_and_stdin_agree_on_line_endings(model, forced, tmp_path):
    """Only \n ends a line; a \r (CRLF or stray) stays part of its line, read from a file or from stdin."""
    raw = "今天天汽\r\n\r\n很好\r我们\n末日".encode()
    src = tmp_path / "in.txt"
    src.write_bytes(raw)
    from_file, from_stdin = ok(cli("-i", src, *model)), ok(cli(*model, stdin=raw))
    assert from_file == from_stdin == expected_lines(forced, ["今天天汽\r", "\r", "很好\r我们", "末日"])
    assert ok(cli("-i", src, "--threshold", "1", *model)) == raw.decode() + "\n"


def test_undecodable_argument_bytes_come_back_unchanged(model, tmp_path):
    raw = b"\xff\xe4\xbb\x8a\xe5\xa4\xa9 ok"  # an invalid byte, then 今天
    proc = subprocess.run([sys.executable, "-m", "corrector", raw, "--threshold", "1", *model], capture_output=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout == raw + b"\n"


def test_threshold_flag(model, forced):
    assert ok(cli("今天天汽很好", "--threshold", "1.0", *model)) == "今天天汽很好\n"
    assert ok(cli("今天天汽很好", "--threshold", "0.0", *model)) == forced.correct("今天天汽很好").target + "\n"


def test_json_lines(model, forced):
    out = ok(cli("--json", *model, stdin="\n".join(LINES) + "\n"))
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == len(LINES)
    for line, row in zip(LINES, rows):
        assert set(row) == {"source", "target", "edits"}
        assert row == forced.correct(line).to_dict()
        for e in row["edits"]:
            assert set(e) == EDIT_KEYS
            assert line[e["position"]] == e["source"]
    assert rows[0]["edits"]  # forced settings: there is something to look at


def test_json_argument(model, forced):
    (row,) = [json.loads(line) for line in ok(cli("今天天汽很好", "--json", *model)).splitlines()]
    assert row == forced.correct("今天天汽很好").to_dict()


def test_explain_text(model, forced):
    out = ok(cli("今天天汽很好hello", "--explain", *model))
    rows = out.splitlines()
    assert rows[0] == forced.correct("今天天汽很好hello").target
    assert len(rows) == 1 + 6  # one row per editable character
    for row, ch in zip(rows[1:], "今天天汽很好"):
        assert ch in row and "rtd=" in row


def test_explain_json(model, forced):
    out = ok(cli("--explain", "--json", *model, stdin="今天天汽很好\n\nhello 北京\n"))
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 3
    for text, row in zip(["今天天汽很好", "", "hello 北京"], rows):
        assert set(row) == {"correction", "chars"}
        assert row["correction"] == forced.correct(text).to_dict()
        assert [c["char"] for c in row["chars"]] == list(text)
        for c in row["chars"]:
            assert 0.0 <= c["rtd_prob"] <= 1.0
            assert bool(c["candidates"]) == c["editable"] == (c["char"] in SAMPLE)


def test_protect_flags(model, tmp_path):
    text = "中国人民银行在北京，张三在上海"
    plain = json.loads(ok(cli(text, "--json", *model)))
    assert {e["position"] for e in plain["edits"]} >= {0, 7, 8, 10, 11}
    words = tmp_path / "words.txt"
    words.write_text("张三\n\n  上海  \n", encoding="utf-8")
    row = json.loads(ok(cli(text, "--json", "--protect", "中国人民银行,北京", "--protect-file", words, *model)))
    assert row["edits"] == []
    row = json.loads(ok(cli(text, "--json", "--protect-file", words, *model)))
    assert {e["position"] for e in row["edits"]} == {0, 1, 2, 3, 4, 5, 7, 8}


def test_confusions_file(model, tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# mine\n汽→张\n", encoding="utf-8")
    plain = json.loads(ok(cli("今天天汽很好", "--json", *model)))
    assert all(e["target"] != "张" for e in plain["edits"])
    row = json.loads(ok(cli("今天天汽很好", "--json", "--confusions", pairs, *model)))
    (edit,) = [e for e in row["edits"] if e["position"] == 3]
    assert (edit["source"], edit["target"], edit["reason"]) == ("汽", "张", "other")


def test_max_edits_and_batch_size(model, forced):
    text = "今天天汽很好。我们去公园散步吧。"
    row = json.loads(ok(cli(text, "--json", "--max-edits", "1", "--batch-size", "1", *model)))
    assert len(row["edits"]) == 2  # one per sentence
    assert row == forced.correct(text, max_edits=1).to_dict()


def test_similar(tiny_bundle):
    out = ok(cli("similar", "己", "--model", tiny_bundle))
    rows = out.splitlines()
    assert rows[0].startswith("己") and "ji3" in rows[0]
    assert rows[1].startswith("sound:")
    assert rows[2].startswith("shape:") and "已" in rows[2]


def test_help():
    out = ok(cli("--help"))
    for flag in ("--input", "--output", "--json", "--explain", "--model", "--threshold", "--protect",
                 "--protect-file", "--confusions", "--batch-size", "--device", "--set", "--version", "similar",
                 "CSC_MODEL_DIR"):
        assert flag in out


def test_version():
    from importlib.metadata import version

    shown = ok(cli("--version"))
    assert shown.startswith(f"electra-csc {version('electra-csc')}; model default ")
    disc = json.loads((REPO / "data/electra_models/default/discriminator/config.json").read_text(encoding="utf-8"))
    assert f": discriminator {disc['num_hidden_layers']} x {disc['hidden_size']}, generator " in shown  # the shape


def test_set_reaches_every_setting(model, forced):
    """--set NAME=VALUE reaches settings that have no flag of their own (here: the generator's top 1 only)."""
    text = "今天天汽很好，我们去公园散步吧"
    want = Corrector.load(model[1], device="cpu", use_lm=False, top_k=1).correct(text).target
    assert ok(cli(text, *model, "--set", "use_lm=false", "--set", "top_k=1")) == want + "\n"
    assert want != forced.correct(text).target  # the settings made a difference


@pytest.mark.parametrize("item, words", [("bogus=1", ["bogus"]), ("threshold=2", ["threshold"]),
                                         ("use_lm=1", ["use_lm"]), ("verify=false", ["unknown", "verify"])])
def test_bad_set(model, item, words):
    failed(cli("今天", *model, "--set", item), *words)


def test_set_without_a_value_is_a_usage_error(model):
    r = cli("今天", *model, "--set", "use_lm")
    assert r.code == 2 and "usage:" in r.err and "expected NAME=VALUE" in r.err and "Traceback" not in r.err


def test_model_dir_variable_is_read(tiny_bundle, tmp_path):
    """$CSC_MODEL_DIR picks the bundle (here a broken copy, so its use shows)."""
    broken = Path(shutil.copytree(tiny_bundle, tmp_path / "broken"))
    (broken / "manifest.json").unlink()
    failed(cli("今天", env={"CSC_MODEL_DIR": str(broken)}), "manifest.json", "broken")


def test_export_lives_in_training():
    failed(cli("export", "a", "b", "c"), "python -m training.bundle.export --hf")


def test_inference_package_never_imports_training():
    import ast

    for path in (REPO / "corrector").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not any(n.split(".")[0] == "training" for n in names), f"{path.name} imports training"


# ---- failing ------------------------------------------------------------------------------------


def test_missing_model_dir(tmp_path):
    failed(cli("今天", "--model", tmp_path / "nowhere", "--device", "cpu"), "no model bundle", "nowhere")


@pytest.mark.parametrize("var", ["CSC_MODEL_DIR", "CORRECTOR_MODEL"])  # the second: deprecated alias
def test_model_dir_variable_naming_nothing_fails(tmp_path, var):
    r = cli("今天天汽很好", env={var: str(tmp_path / "absent")})
    failed(r, "no model bundle", var, "absent")


def test_broken_model(tiny_bundle, tmp_path):
    broken = Path(shutil.copytree(tiny_bundle, tmp_path / "broken"))
    (broken / "onnx/generator.onnx").write_bytes(b"garbage")
    failed(cli("今天", "--model", broken, "--device", "cpu"), "generator.onnx")
    (broken / "manifest.json").unlink()
    failed(cli("今天", "--model", broken, "--device", "cpu"), "manifest.json")


@pytest.mark.parametrize("value", ["2.0", "-0.5"])
def test_bad_threshold(model, value):
    failed(cli("今天", "--threshold", value, *model), "threshold")


@pytest.mark.parametrize(("flag", "value"), [("--max-edits", "-1"), ("--batch-size", "0")])
def test_bad_numeric_settings(model, flag, value):
    failed(cli("今天", flag, value, *model), flag[2:].replace("-", "_"))


def test_device_cuda_runs_or_says_why(tiny_bundle):
    r = cli("今天", "--model", tiny_bundle, "--device", "cuda")
    if r.code == 0:
        assert len(r.out) == 3 and r.out.endswith("\n")
    else:
        failed(r, "CUDA")


def test_missing_input_file(model, tmp_path):
    failed(cli("--input", tmp_path / "absent.txt", *model), "absent.txt")


def test_unreadable_input_file(model, tmp_path):
    failed(cli("--input", tmp_path, *model), str(tmp_path))  # a directory cannot be read as text


def test_invalid_utf8_input_file(model, tmp_path):
    src = tmp_path / "latin1.txt"
    src.write_bytes("今天\n".encode() + "café\n".encode("latin-1"))
    failed(cli("--input", src, *model), "latin1.txt", "UTF-8")


def test_invalid_utf8_stdin(model):
    failed(cli(*model, stdin=b"\xff\xfe bad\n"), "stdin", "UTF-8")


def test_bad_confusions_file(model, tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("汽→气\n汽车→气\n", encoding="utf-8")
    failed(cli("今天", "--confusions", pairs, *model), "pairs.txt", "line 2")
    failed(cli("今天", "--confusions", tmp_path / "absent.txt", *model), "absent.txt")


def test_missing_protect_file(model, tmp_path):
    failed(cli("今天", "--protect-file", tmp_path / "absent.txt", *model), "absent.txt")


def test_unwritable_output(model, tmp_path):
    failed(cli("今天", "--output", tmp_path / "no" / "such" / "dir.txt", *model), "dir.txt")


@pytest.mark.parametrize("arg", ["己已", "a", "，", "😀"])
def test_similar_needs_one_chinese_character(tiny_bundle, arg):
    failed(cli("similar", arg, "--model", tiny_bundle), "one Chinese character", arg)


def test_similar_missing_model(tmp_path):
    failed(cli("similar", "己", "--model", tmp_path / "nowhere"), "no model bundle")


@pytest.mark.parametrize("args", [["--threshold", "abc"], ["--device", "tpu"], ["--no-such-flag"], ["similar"]])
def test_usage_errors(model, args):
    r = cli(*(args if args == ["similar"] else ["今天", *args, *model]))
    assert r.code == 2
    assert "usage:" in r.err and "Traceback" not in r.err
    assert r.out == ""
