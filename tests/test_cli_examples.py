"""Every command-line example of the README's "Command line" section and of ``python -m corrector --help`` runs
as written (on the shipped bundle), in a folder holding the files they name; and the positional text is never
taken for a list option's value."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

README = ROOT / "README.md"
FILES = {"in.txt": "他以经知道自己错了。\n\n今天天汽很好\n", "names.txt": "张三\n李四\n", "pairs.txt": "己→已\n"}


def readme_examples() -> list[str]:
    """The command lines of the README's "Command line" block, each without its trailing comment."""
    section = README.read_text(encoding="utf-8").split("## Command line", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if "python -m corrector" in line]


def help_examples() -> list[str]:
    out = shell("python -m corrector --help", ROOT).stdout
    block = out.split("examples:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def shell(command: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``command`` run by bash, ``python`` being this interpreter (its folder first on PATH)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("CSC_MODEL_DIR", None)
    return subprocess.run(["bash", "-c", command], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("examples")
    for name, text in FILES.items():
        (d / name).write_text(text, encoding="utf-8")
    (d / "path" / "to").mkdir(parents=True)
    (d / "path" / "to" / "bundle").symlink_to(ROOT / "data" / "electra_models" / "default")
    return d


def test_the_examples_are_found():
    assert len(readme_examples()) >= 9 and any("--protect" in c for c in readme_examples())
    assert len(help_examples()) >= 5 and any("--protect" in c for c in help_examples())


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_examples() + help_examples())
def test_example_runs(command, workdir):
    proc = shell(command.replace('"..."', '"他以经知道自己错了。"'), workdir)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    if "--output out.txt" in command:
        assert (workdir / "out.txt").read_text(encoding="utf-8").count("\n") == 3
    else:
        assert proc.stdout.strip()


@pytest.mark.slow
def test_the_text_after_a_protected_word_is_corrected_not_protected(workdir):
    """``--protect`` takes one word (or a comma list): the text after it is the text, whatever stdin holds."""
    for flags in (["--protect", "张三"], ["--protect", "张三,李四"], ["--protect", "张三", "--protect", "李四"]):
        proc = shell(shlex.join(["python", "-m", "corrector", *flags, "张三以经到了"]), workdir)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "张三已经到了\n", "")


def test_with_no_text_in_a_terminal_it_says_what_it_needs(workdir):
    """No text, no --input and stdin a terminal: one line on stderr and exit code 1, not a silent wait."""
    proc = subprocess.run([sys.executable, "-c", "import pty, sys; sys.exit(pty.spawn([sys.argv[1], '-m', "
                           "'corrector']) >> 8)", sys.executable], cwd=workdir, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1
    assert "error: no text to correct" in proc.stdout  # the pty joins the child's stderr to its output


def test_text_and_input_together_is_an_error(workdir):
    proc = shell("python -m corrector --input in.txt 他以经知道了", workdir)
    assert proc.returncode == 1 and proc.stderr.startswith("error: give the text as an argument or with --input")
