"""``import _checkout`` first in a benchmark: the repository root goes on ``sys.path``, so that ``training`` and
``service`` (which are not installed: only ``corrector`` is) import when a script runs as ``python benchmarks/X.py``."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
