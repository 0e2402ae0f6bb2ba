"""Chinese spelling correction with ELECTRA on ONNX Runtime.

    from corrector import Corrector
    fix = Corrector.load()                 # the bundled default model
    result = fix.correct("今天天汽很好")
    result.target, result.edits             # corrected text (same length), Edit(position, source, ...)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corrector.types import Candidate, CharExplanation, Correction, CorrectorError, Edit, Explanation

if TYPE_CHECKING:
    from corrector.config import CorrectorConfig
    from corrector.corrector import Corrector

__all__ = [
    "Candidate", "CharExplanation", "Correction", "Corrector", "CorrectorConfig", "CorrectorError", "Edit",
    "Explanation",
]


def __getattr__(name: str):  # keep `import corrector` cheap: the runtime loads on first use
    if name == "Corrector":
        from corrector.corrector import Corrector

        return Corrector
    if name == "CorrectorConfig":
        from corrector.config import CorrectorConfig

        return CorrectorConfig
    raise AttributeError(name)
