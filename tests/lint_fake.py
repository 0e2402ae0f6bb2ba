"""A corrector pass with known answers for the lint tests: 以经 → 已经 (0.95, pinyin, alternative 亦) and 在见 → 再见
(0.6, pinyin), wherever they stand in a text; it records the texts it was given. The ``fake`` fixture (conftest.py)
runs the lint command with it; ``lint`` runs the command in this process."""

from __future__ import annotations

from typing import Any

from corrector.lint import command_line as command


class FakePass:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.settings: list[dict[str, Any]] = []

    def __call__(self, texts: list[str], settings: dict[str, Any]) -> list[list[tuple]]:
        self.calls.append(list(texts))
        self.settings.append(dict(settings))
        out = []
        for t in texts:
            edits = []
            for pair, target, confidence, alternatives in (("以经", "已", 0.95, ("亦",)), ("在见", "再", 0.6, ())):
                at = t.find(pair)
                while at >= 0:
                    edits.append((at, pair[0], target, confidence, "pinyin", alternatives))
                    at = t.find(pair, at + 1)
            out.append(sorted(edits))
        return out


def lint(capsys, *argv: str) -> tuple[int, str, str]:
    """``python -m corrector lint ARGV`` in this process: its exit status, stdout and stderr."""
    try:
        code = command.main(["--no-progress", *argv])
    except SystemExit as usage:  # argparse's own errors
        code = int(usage.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
