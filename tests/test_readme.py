"""The README stays a short page for users, and every relative link in it and in docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
MAX_README_BYTES = 20 * 1024


def links(path: Path) -> list[str]:
    """Targets of the Markdown links and images in a file, code spans and blocks left out."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


def test_readme_is_at_most_20_kb():
    assert README.stat().st_size <= MAX_README_BYTES, f"README.md is {README.stat().st_size} bytes"


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    broken = []
    for target in links(doc):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


def test_the_readme_test_command_is_the_one_ci_runs():
    command = 'pip install torch==2.13.0 && pip install -e ".[train,service,dev,distributed]" && pytest -q'
    assert command in README.read_text(encoding="utf-8")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_cpu_build_of_torch_is_in_the_block_people_copy():
    """Before: command 2 pulled the CUDA build of torch (several GB) on a CPU-only Linux machine; the CPU line sat in
    a bullet below the block."""
    text = README.read_text(encoding="utf-8")
    block = text[text.index("## Install and quick start"):]
    block = block[block.index("```bash"): block.index("```", block.index("```bash") + 3)]
    cpu = block.index("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu")
    assert cpu < block.index('pip install torch==2.13.0 && pip install -e ".[train,service,dev,distributed]"')


def test_link_finder_sees_links_and_skips_code():
    sample = ROOT / "docs" / "decoder.md"
    found = links(sample)
    assert "experiments/2026-11-decoder.md" in found and "model-card.md" in found
    assert slug("Reading `explain`") == "reading-explain"
    assert slug("Install and quick start") == "install-and-quick-start"
