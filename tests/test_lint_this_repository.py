"""``python -m corrector lint .`` on this repository with the shipped model, as the README shows it: nothing is read
in the bundle's folder, and ``lint docs/ --fix`` (the README's example) would write nothing into the project's own
documentation, whose examples of slips are quoted as code or judged below the fix bar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_lint_reads_no_bundle_file_and_would_fix_nothing_in_the_docs():
    done = subprocess.run([sys.executable, "-m", "corrector", "lint", ".", "--format", "json", "--no-cache",
                           "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert not [f for f in findings if f["path"].startswith("data/")]
    assert not [(f["path"], f["line"], f["word"]) for f in findings if f["path"].startswith("docs/") and f["fix"]]
