"""The CI integrations as they will run: the pre-commit hooks' entries and the GitHub Action's lint step, executed
on a folder with a slip (the shipped bundle), and their declared dependencies kept equal to the 'lint' extra."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
SLIP = "# 说明\n\n他以经知道自己错了。\n"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def entry(hook: dict) -> list[str]:
    """The hook's entry as pre-commit runs it, the console script as this checkout's ``python -m corrector``."""
    argv = shlex.split(hook["entry"])
    assert argv[0] == "electra-csc"
    return [sys.executable, "-m", "corrector", *argv[1:]]


def test_pre_commit_hooks_report_and_fix(tmp_path):
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    assert set(hooks) == {"electra-csc", "electra-csc-fix"} and all(h["require_serial"] for h in hooks.values())
    lint_extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["lint"]
    wanted = sorted(d for d in lint_extra if ";" not in d)
    assert all(sorted(h["additional_dependencies"]) == wanted for h in hooks.values())
    page = tmp_path / "page.md"
    page.write_text(SLIP, encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n")  # a staged file of no kind that is read
    report = subprocess.run([*entry(hooks["electra-csc"]), "page.md", "image.png"], cwd=tmp_path, env=env(),
                            capture_output=True, text=True)
    assert report.returncode == 1 and report.stdout.startswith("page.md:3:2: 以经→已经"), report.stderr
    fixed = subprocess.run([*entry(hooks["electra-csc-fix"]), "page.md"], cwd=tmp_path, env=env(),
                           capture_output=True, text=True)
    assert fixed.returncode == 0 and page.read_text(encoding="utf-8") == SLIP.replace("以经", "已经"), fixed.stderr


def test_the_action_lint_step_writes_sarif_and_the_count(tmp_path):
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = {s.get("name"): s for s in action["runs"]["steps"]}
    assert action["runs"]["using"] == "composite" and "upload-sarif" in str(steps["Upload to code scanning"]["uses"])
    assert steps["Lint"]["run"] == 'bash "${{ github.action_path }}/.github/lint-step.sh"'
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(SLIP, encoding="utf-8")
    outputs = tmp_path / "outputs"
    done = subprocess.run(["bash", str(ROOT / ".github" / "lint-step.sh")], cwd=tmp_path, capture_output=True,
                          text=True, env={**env(), "LINT_PATHS": "docs", "LINT_ARGS": "--min-confidence 0.5",
                                          "LINT_SARIF": "out.sarif", "GITHUB_OUTPUT": str(outputs)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("::warning file=docs/page.md,line=3,col=2,")
    sarif = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0" and len(sarif["runs"][0]["results"]) == 1
    assert outputs.read_text() == "findings=1\n"
