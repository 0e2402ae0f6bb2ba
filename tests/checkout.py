"""The project's sources as a package is built from them, copied into a clean folder (the install tests)."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "corrector", "service", "training", "data/electra_models")


def copy_sources(dst: Path) -> Path:
    """Copy what a build reads (no caches, no runs) into ``dst``; returns ``dst``."""
    for rel in SOURCES:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / rel).is_dir():
            shutil.copytree(REPO / rel, dst / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / rel, dst / rel)
    return dst
