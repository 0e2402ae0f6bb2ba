"""Text files opened by their suffix: ``.gz`` and ``.xz`` decompressed, anything else read as it is (``corrector
adapt`` reads a domain's text with it, the training pipeline its corpus, ``training.data.text_files``)."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path
from typing import IO


def open_text(path: Path, mode: str = "rt", errors: str = "strict") -> IO[str]:
    """``path`` opened as text, decompressed by its suffix (``.gz``, ``.xz``; anything else is read as it is)."""
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8", errors=errors)  # type: ignore[return-value]
    if path.suffix == ".xz":
        return lzma.open(path, mode, encoding="utf-8", errors=errors)  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8", errors=errors)
