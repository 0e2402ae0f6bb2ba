"""``python -m corrector batch``: ordered shards, both engines alike, resumable, bad lines reported, not fatal.

The tiny random bundle with settings that force edits, so every corrected row visibly differs from its
source. Ray tests share one local Ray runtime with 2 CPUs.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from corrector import Corrector
from corrector.batch import command, shards

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["今天天汽很好", "", "我们去公园散步吧，hello world 😀", "他已经知道自己错了", "中国人民银行在北京",
         "未来末日", "龘", "精致精制\r", "张三李四"]


@dataclass
class Run:
    code: int
    out: str
    err: str


def batch(*args: str | Path, env: dict | None = None) -> Run:
    """The batch command as a user runs it: a subprocess."""
    proc = subprocess.run([sys.executable, "-m", "corrector", "batch", *map(str, args)], capture_output=True,
                          cwd=REPO, env={**os.environ, **(env or {})}, timeout=300)
    return Run(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace"))


def failed(r: Run, *words: str) -> str:
    """Exit code 1, one 'error:' line on stderr, no traceback."""
    assert r.code == 1, (r.out, r.err)
    lines = r.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: "), r.err
    for w in words:
        assert w in lines[0]
    return lines[0]


def run_here(*args: str | Path) -> None:
    """The batch command in this process (shares this process's Ray runtime)."""
    assert command.run_batch([str(a) for a in args]) == 0


def part_files(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if p.name.startswith("part-"))


def read_rows(out: Path) -> list[dict]:
    return [json.loads(line) for p in part_files(out) for line in p.read_text(encoding="utf-8").splitlines()]


def read_errors(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "errors.jsonl").read_text(encoding="utf-8").splitlines()]


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def expected_row(fix: Corrector, file: str, line: int, text: str, **extra) -> dict:
    return {"file": file, "line": line, **extra, **fix.correct(text).to_dict()}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def same_outputs(a: Path, b: Path) -> None:
    names = [p.name for p in part_files(a)]
    assert names == [p.name for p in part_files(b)] and names
    for name in [*names, "errors.jsonl"]:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


# ---- inputs and outputs -------------------------------------------------------------------------


def test_text_file_rows_in_input_order(model, forced, tmp_path):
    src = write_lines(tmp_path / "in.txt", TEXTS)
    out = tmp_path / "out"
    r = batch("--input", src, "--output", out, "--shard-size", "4", "--batch-size", "3", *model)
    assert r.code == 0 and r.err == "", r.err  # no progress bar when stderr is not a terminal
    assert [p.name for p in part_files(out)] == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    assert [len(p.read_text(encoding="utf-8").splitlines()) for p in part_files(out)] == [4, 4, 1]
    rows = read_rows(out)
    assert rows == [expected_row(forced, str(src), i, t) for i, t in enumerate(TEXTS, 1)]
    assert rows[0]["target"] != rows[0]["source"]  # forced settings: there are edits to look at
    changed = sum(r["target"] != r["source"] for r in rows)
    s = summary(out)
    assert (s["lines_in"], s["corrected"], s["changed"], s["errors"]) == (9, 9, changed, 0)
    assert s["engine"] == "local" and s["shards"] == 3 and s["corrected_this_run"] == 9 and s["lines_per_s"] > 0
    assert (out / "errors.jsonl").read_text() == ""
    assert r.out.startswith(f"9 lines in, 9 corrected ({changed} changed), 0 errors;") and "lines/s" in r.out


def test_jsonl_file_with_ids_and_another_text_field(model, forced, tmp_path):
    src = tmp_path / "in.jsonl"
    rows_in = [{"id": 7, "body": TEXTS[0]}, {"body": TEXTS[3], "extra": [1]}, {"id": "a-1", "body": TEXTS[4]}]
    src.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows_in[:2]) + "\n\n  \n"
                   + json.dumps(rows_in[2], ensure_ascii=False), encoding="utf-8")  # blank lines are no texts
    out = tmp_path / "out"
    assert batch("-i", src, "-o", out, "--text-field", "body", *model).code == 0
    assert read_rows(out) == [expected_row(forced, str(src), 1, TEXTS[0], id=7),
                              expected_row(forced, str(src), 2, TEXTS[3]),
                              expected_row(forced, str(src), 5, TEXTS[4], id="a-1")]
    assert summary(out)["errors"] == 0


def test_parquet_input_and_parquet_output(model, forced, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "in.parquet"
    texts = [TEXTS[0], None, TEXTS[3], TEXTS[5], TEXTS[7]]
    pq.write_table(pa.table({"id": [10, 11, 12, 13, 14], "text": texts}), src, row_group_size=2)
    out_jsonl, out_pq = tmp_path / "jsonl", tmp_path / "pq"
    assert batch("-i", src, "-o", out_jsonl, "--shard-size", "3", *model).code == 0
    want = [expected_row(forced, str(src), n, t, id=10 + n - 1) for n, t in enumerate(texts, 1) if t is not None]
    assert read_rows(out_jsonl) == want
    assert read_errors(out_jsonl) == [{"file": str(src), "line": 2, "reason": "'text' is null"}]

    assert batch("-i", src, "-o", out_pq, "--shard-size", "3", "--format", "parquet", *model).code == 0
    parts = part_files(out_pq)
    assert [p.name for p in parts] == ["part-00000.parquet", "part-00001.parquet"]
    got = [row for p in parts for row in pq.read_table(p).to_pylist()]
    assert got == want  # before: the integer ids came out as strings (issue 72, 11)
    assert all(pq.read_schema(p).field("id").type == pa.int64() for p in parts)
    assert read_errors(out_pq) == read_errors(out_jsonl)
    mixed = tmp_path / "mixed.jsonl"  # ids of any other kind, or from JSONL: strings as they are, others as JSON
    mixed.write_text("\n".join(json.dumps({"id": i, "text": TEXTS[0]}) for i in (7, "x7", [1])) + "\n",
                     encoding="utf-8")
    assert batch("-i", mixed, "-o", tmp_path / "mixed", "--format", "parquet", *model).code == 0
    assert [r["id"] for p in part_files(tmp_path / "mixed") for r in pq.read_table(p).to_pylist()] == ["7", "x7", "[1]"]


def test_directory_and_glob_inputs_in_name_order(model, forced, tmp_path):
    d = tmp_path / "corpus"
    (d / "sub").mkdir(parents=True)
    write_lines(d / "b.txt", TEXTS[3:5])
    write_lines(d / "a.txt", TEXTS[0:1])
    (d / "c.jsonl").write_text(json.dumps({"text": TEXTS[5]}) + "\n", encoding="utf-8")
    write_lines(d / "sub" / "d.txt", TEXTS[6:7])
    write_lines(d / "_skipped.txt", ["天汽"])
    write_lines(d / ".hidden.txt", ["天汽"])
    out = tmp_path / "out"
    assert batch("-i", d, "-o", out, *model).code == 0
    assert [(r["file"], r["line"], r["source"]) for r in read_rows(out)] == [
        ("a.txt", 1, TEXTS[0]), ("b.txt", 1, TEXTS[3]), ("b.txt", 2, TEXTS[4]), ("c.jsonl", 1, TEXTS[5]),
        ("sub/d.txt", 1, TEXTS[6])]
    assert len(part_files(out)) == 4  # shards never span files

    out2 = tmp_path / "out2"
    assert batch("-i", d / "*.txt", "-o", out2, *model).code == 0
    assert [(r["file"], r["source"]) for r in read_rows(out2)] == [  # a glob takes what it matches
        (str(d / "_skipped.txt"), "天汽"), (str(d / "a.txt"), TEXTS[0]), (str(d / "b.txt"), TEXTS[3]),
        (str(d / "b.txt"), TEXTS[4])]
    assert read_rows(out2)[1] == expected_row(forced, str(d / "a.txt"), 1, TEXTS[0])


# ---- bad lines ----------------------------------------------------------------------------------


def test_bad_lines_are_reported_and_their_neighbours_corrected(model, forced, tmp_path):
    txt = tmp_path / "in.txt"
    txt.write_bytes("今天天汽\n".encode() + b"caf\xe9 \xff\n" + ("长" * 21 + "\n").encode() + "未来末日\n".encode()
                    + ("龘" * 20).encode())  # the last line: exactly --max-chars, no final newline
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_bytes(b"\n".join([
        json.dumps({"text": "他已经知道"}).encode(),
        b'{"text": "broken',
        json.dumps({"body": "no text"}).encode(),
        json.dumps({"text": 5}).encode(),
        b"[1, 2]",
        b'{"text": "\\ud800 lone"}',
        json.dumps({"text": "长" * 21}).encode(),
        b'{"text": "\xff"}',
        json.dumps({"text": "中国人民银行"}).encode(),
    ]) + b"\n")
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(txt, d / "a.txt")
    shutil.copy(jsonl, d / "b.jsonl")
    out = tmp_path / "out"
    r = batch("-i", d, "-o", out, "--max-chars", "20", "--shard-size", "2", *model)
    assert r.code == 0, r.err
    good = [("a.txt", 1, "今天天汽"), ("a.txt", 4, "未来末日"), ("a.txt", 5, "龘" * 20),
            ("b.jsonl", 1, "他已经知道"), ("b.jsonl", 9, "中国人民银行")]
    assert read_rows(out) == [expected_row(forced, f, n, t) for f, n, t in good]
    errors = read_errors(out)
    assert [(e["file"], e["line"]) for e in errors] == [("a.txt", 2), ("a.txt", 3)] + [
        ("b.jsonl", n) for n in (2, 3, 4, 5, 6, 7, 8)]
    reasons = [e["reason"] for e in errors]
    for reason, words in zip(reasons, [
            ("invalid UTF-8", "byte 3"), ("longer than 20 characters",), ("invalid JSON",), ("no 'text' field",),
            ("'text' is not a string",), ("expected a JSON object",), ("lone surrogate",),
            ("longer than 20 characters",), ("invalid UTF-8",)]):
        assert all(w in reason for w in words), reason
    s = summary(out)
    assert (s["lines_in"], s["corrected"], s["errors"]) == (14, 5, 9)
    assert r.out.startswith("14 lines in, 5 corrected (") and "9 errors" in r.out


def test_over_long_line_is_skipped_without_reading_it_whole(model, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes("好\n".encode() + b"x" * 3_000_000 + "\n天汽\n".encode())
    out = tmp_path / "out"
    assert batch("-i", src, "-o", out, "--max-chars", "1000", *model).code == 0
    assert [r["source"] for r in read_rows(out)] == ["好", "天汽"]
    assert [(e["line"], e["reason"]) for e in read_errors(out)] == [(2, "line longer than 1000 characters")]


# ---- resuming -----------------------------------------------------------------------------------


class Crash(Exception):
    pass


def crash_after(monkeypatch, rows: int) -> None:
    """Make the shard writer die mid-shard after ``rows`` rows, as a killed process would."""
    real = shards._ShardWriter.add
    seen = [0]

    def add(self, row):
        if seen[0] == rows:
            raise Crash
        seen[0] += 1
        real(self, row)

    monkeypatch.setattr(shards._ShardWriter, "add", add)


def corpus(tmp_path: Path, n: int) -> Path:
    return write_lines(tmp_path / "in.txt", [TEXTS[i % len(TEXTS)] + str(i) for i in range(n)])


def test_resume_after_a_crash_mid_shard(model, tmp_path, monkeypatch):
    src = corpus(tmp_path, 23)
    args = ["-i", src, "--shard-size", "5", "--batch-size", "2", *model]
    clean, out = tmp_path / "clean", tmp_path / "out"
    run_here(*args, "-o", clean)

    with monkeypatch.context() as m:
        crash_after(m, 12)  # shards 0 and 1 done, shard 2 half written
        with pytest.raises(Crash):
            run_here(*args, "-o", out)
    assert [p.name for p in part_files(out)] == ["part-00000.jsonl", "part-00001.jsonl"]
    assert (out / ".part-00002.jsonl.tmp").exists()  # the half-written shard does not look complete
    done_before = {p.name: p.stat().st_mtime_ns for p in part_files(out)}

    run_here(*args, "-o", out)
    same_outputs(clean, out)
    assert [(r["line"], r["source"]) for r in read_rows(out)] == [
        (i + 1, TEXTS[i % len(TEXTS)] + str(i)) for i in range(23)]  # nothing lost, nothing twice
    assert {n: (out / n).stat().st_mtime_ns for n in done_before} == done_before  # finished shards kept
    assert not list(out.glob(".*.tmp"))
    s = summary(out)
    assert (s["shards_already_done"], s["corrected_this_run"], s["lines_in"], s["corrected"]) == (2, 13, 23, 23)


def test_a_shard_without_its_state_file_is_redone(model, tmp_path):
    src = corpus(tmp_path, 12)
    out = tmp_path / "out"
    args = ["-i", src, "-o", out, "--shard-size", "5", *model]
    assert batch(*args).code == 0
    before = read_rows(out)
    (out / "_state" / "part-00001.json").unlink()  # killed between renaming the state and the part file
    r = batch(*args)
    assert r.code == 0 and "(2 already done)" in r.out
    assert read_rows(out) == before and summary(out)["corrected_this_run"] == 5
    r = batch(*args)  # nothing left to do
    assert r.code == 0 and "this run 0 lines" in r.out and read_rows(out) == before


@pytest.mark.slow
def test_resume_after_the_process_is_killed(model, tmp_path):
    src = corpus(tmp_path, 400)
    args = ["-i", src, "--shard-size", "20", "--batch-size", "10", *model]
    out, clean = tmp_path / "out", tmp_path / "clean"
    proc = subprocess.Popen([sys.executable, "-m", "corrector", "batch", *map(str, args), "-o", str(out)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (out / "part-00002.jsonl").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed mid-run, not finished
    assert 3 <= len(part_files(out)) < 20

    assert batch(*args, "-o", out).code == 0
    assert [r["line"] for r in read_rows(out)] == list(range(1, 401))
    run_here(*args, "-o", clean)
    same_outputs(clean, out)


def test_a_different_job_in_the_output_directory_is_refused(model, tmp_path):
    src = corpus(tmp_path, 6)
    out = tmp_path / "out"
    assert batch("-i", src, "-o", out, "--shard-size", "5", *model).code == 0
    failed(batch("-i", src, "-o", out, "--shard-size", "3", *model), "another job", "shard_size")
    failed(batch("-i", src, "-o", out, "--shard-size", "5", "--threshold", "1", *model), "settings")
    src.write_text("新的\n", encoding="utf-8")
    failed(batch("-i", src, "-o", out, "--shard-size", "5", *model), "inputs")


# ---- options shared with the CLI ----------------------------------------------------------------


def test_set_option_in_the_cli_and_batch(model, forced_bundle, tmp_path):
    cli = [sys.executable, "-m", "corrector"]
    env = {**os.environ}
    plain = subprocess.run([*cli, "今天天汽很好", *model], capture_output=True, cwd=REPO, env=env, timeout=120)
    assert plain.stdout.decode() != "今天天汽很好\n"
    same = subprocess.run([*cli, "今天天汽很好", *model, "--set", "threshold=1.0", "--set", "use_lm=false"],
                          capture_output=True, cwd=REPO, env=env, timeout=120)
    assert same.returncode == 0 and same.stdout.decode() == "今天天汽很好\n"

    src = write_lines(tmp_path / "in.txt", TEXTS)
    out = tmp_path / "out"
    assert batch("-i", src, "-o", out, "--set", "threshold=1", *model).code == 0
    assert all(r["target"] == r["source"] and r["edits"] == [] for r in read_rows(out))
    job = json.loads((out / "_state" / "job.json").read_text(encoding="utf-8"))
    assert job["settings"] == {"threshold": 1}

    failed(batch("-i", src, "-o", tmp_path / "o2", "--set", "no_such=1", *model), "no_such")
    for bad in ["device=cpu", "threshold"]:
        r = batch("-i", src, "-o", tmp_path / "o3", "--set", bad, *model)
        assert r.code == 2 and "usage:" in r.err and "Traceback" not in r.err


def test_usage_and_input_errors(model, tmp_path):
    src = write_lines(tmp_path / "in.txt", TEXTS)
    out = tmp_path / "out"
    failed(batch("-i", tmp_path / "absent.txt", "-o", out, *model), "input not found", "absent.txt")
    failed(batch("-i", tmp_path / "*.nothing", "-o", out, *model), "no files match")
    failed(batch("-i", src, "-o", out, "--shard-size", "0", *model), "--shard-size")
    failed(batch("-i", src, "-o", out, "--num-actors", "2", *model), "--engine ray")
    failed(batch("-i", src, "-o", out, "--model", tmp_path / "nowhere"), "no model bundle")
    assert not out.exists()  # nothing written before the job can start
    (tmp_path / "file").write_text("")
    failed(batch("-i", src, "-o", tmp_path / "file" / "out", *model), "cannot create")
    r = batch("-i", src, *model)
    assert r.code == 2 and "--output" in r.err
    helptext = batch("--help").out
    for flag in ("--input", "--output", "--format", "--text-field", "--engine", "--address", "--num-actors",
                 "--batch-size", "--shard-size", "--model", "--threshold", "--protect-file", "--confusions", "--set"):
        assert flag in helptext


def test_without_the_distributed_extra(model, tmp_path):
    """A base install (no ray, no pyarrow): local text/JSONL work; Ray and Parquet say what to install."""
    blocked = tmp_path / "blocked"
    for name in ("ray", "pyarrow"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocked), str(REPO)])}
    src = write_lines(tmp_path / "in.txt", TEXTS)
    assert batch("-i", src, "-o", tmp_path / "ok", *model, env=env).code == 0
    assert len(read_rows(tmp_path / "ok")) == len(TEXTS)
    failed(batch("-i", src, "-o", tmp_path / "o1", "--engine", "ray", *model, env=env), "[distributed]")
    failed(batch("-i", src, "-o", tmp_path / "o2", "--format", "parquet", *model, env=env), "[distributed]")
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    failed(batch("-i", tmp_path / "x.parquet", "-o", tmp_path / "o3", *model, env=env), "[distributed]")


# ---- Ray ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_runtime():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def mixed_corpus(tmp_path: Path) -> Path:
    """Text, JSONL and Parquet files, each with a bad line or two."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.txt").write_bytes("\n".join(TEXTS * 3).encode() + b"\n\xff\xfe\n" + "末日".encode())
    rows = [json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in enumerate(TEXTS)]
    (d / "b.jsonl").write_text("\n".join([*rows, '{"id": 99}', *rows]) + "\n", encoding="utf-8")
    pq.write_table(pa.table({"text": [*TEXTS, None, *TEXTS[:4]]}), d / "c.parquet", row_group_size=4)
    return d


@pytest.mark.slow
def test_ray_and_local_give_identical_shards(ray_runtime, model, tmp_path):
    d = mixed_corpus(tmp_path)
    args = ["-i", d, "--shard-size", "6", "--batch-size", "4", *model]
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    run_here(*args, "-o", local)
    run_here(*args, "-o", on_ray, "--engine", "ray", "--num-actors", "2")
    same_outputs(local, on_ray)  # same rows, same order, byte for byte
    rows = read_rows(on_ray)
    assert [r["file"] for r in rows] == ["a.txt"] * 28 + ["b.jsonl"] * 18 + ["c.parquet"] * 13
    assert [(e["file"], e["line"]) for e in read_errors(on_ray)] == [("a.txt", 28), ("b.jsonl", 10),
                                                                      ("c.parquet", 10)]
    s = summary(on_ray)
    assert s["engine"] == "ray" and (s["lines_in"], s["corrected"], s["errors"]) == (62, 59, 3)
    assert s["shards"] == len(part_files(on_ray)) == 5 + 4 + 3


@pytest.mark.slow
def test_ray_resumes_a_crashed_run_and_a_crashed_ray_run_resumes(ray_runtime, model, tmp_path, monkeypatch):
    d = mixed_corpus(tmp_path)
    args = ["-i", d, "--shard-size", "6", "--batch-size", "4", "--format", "parquet", *model]
    on_ray = ["--engine", "ray", "--num-actors", "2"]
    clean, out, out2 = tmp_path / "clean", tmp_path / "out", tmp_path / "out2"
    run_here(*args, "-o", clean)
    for first, then, where in [([], on_ray, out), (on_ray, [], out2)]:
        with monkeypatch.context() as m:
            crash_after(m, 33)
            with pytest.raises(Crash):
                run_here(*args, *first, "-o", where)
        done = len(part_files(where))
        assert 0 < done < 12
        run_here(*args, *then, "-o", where)
        same_outputs(clean, where)
        assert summary(where)["shards_already_done"] == done
