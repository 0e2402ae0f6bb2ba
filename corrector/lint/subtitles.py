"""The cue text of subtitles: SubRip (.srt), WebVTT (.vtt) and Advanced SubStation Alpha (.ass, .ssa).

Each cue is one block, its lines joined without their breaks (a subtitle wraps where the screen does, not where a
sentence does). Never checked: cue numbers and identifiers, timings and cue settings, WebVTT's header, ``NOTE``,
``STYLE`` and ``REGION`` blocks, ASS's other sections, fields and ``Comment:`` lines; inside cue text, tags
(``<i>``, ``<v Speaker>``, ``<00:01.000>``, ``{\\an8}``), entities and ASS's ``\\N``, ``\\n`` and ``\\h`` are context.
Each cue's lines are placed as "cue N (its start time)".
"""

from __future__ import annotations

import re
from pathlib import PurePath

from .document import Block, Document, Piece, block_of

TIMING = re.compile(r"^\s*(\d{1,2}:)?\d{1,2}:\d{2}[,.]\d{1,3}\s*-->\s*(\d{1,2}:)?\d{1,2}:\d{2}[,.]\d{1,3}")
MARKUP = re.compile(r"<[^>\n]*>|\{\\[^}\n]*\}|&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);|\\[Nnh]")
VTT_SKIPPED = ("NOTE", "STYLE", "REGION")


def subtitle_blocks(doc: Document) -> list[Block]:
    """The cues of ``doc`` (its kind from its name's suffix) as blocks; their lines placed in ``doc.places``."""
    suffix = PurePath(doc.path).suffix.lower()
    return _ass(doc) if suffix in (".ass", ".ssa") else _cues(doc, vtt=suffix == ".vtt")


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its ending) of each line."""
    out, at = [], 0
    for line in text.splitlines(keepends=True):
        out.append((at, line.rstrip("\r\n")))
        at += len(line)
    return out


def _pieces(line: str, start: int) -> list[Piece]:
    out, at = [], 0
    for m in MARKUP.finditer(line):
        out += [Piece(line[at:m.start()], start + at), Piece(line[m.start():m.end()], None, prose=False)]
        at = m.end()
    out.append(Piece(line[at:], start + at))
    return [p for p in out if p.text]


def _cues(doc: Document, vtt: bool) -> list[Block]:
    """SubRip and WebVTT: a cue is its timing line and the text lines up to a blank line (its number or identifier
    is the line before the timing)."""
    lines = _lines(doc.text)
    blocks: list[Block] = []
    count, n = 0, 0
    while n < len(lines):
        at, line = lines[n]
        if vtt and line.split(" ", 1)[0] in VTT_SKIPPED:  # a NOTE, STYLE or REGION block: up to a blank line
            while n < len(lines) and lines[n][1].strip():
                n += 1
            continue
        if not TIMING.match(line):
            n += 1
            continue
        count += 1
        before = lines[n - 1][1].strip() if n > 0 else ""
        name = before if before and not TIMING.match(before) and not before.startswith("WEBVTT") else str(count)
        place = f"cue {name} ({line.split('-->')[0].strip()})"
        pieces: list[Piece] = []
        n += 1
        while n < len(lines) and lines[n][1].strip():
            at, text = lines[n]
            pieces += _pieces(text, at)
            doc.places[n + 1] = place
            n += 1
        if (b := block_of(pieces)) is not None:
            blocks.append(b)
    return blocks


def _ass(doc: Document) -> list[Block]:
    """ASS/SSA: the Text field (the last of the ``Format:`` line's fields) of each ``Dialogue:`` line of the
    ``[Events]`` section."""
    blocks: list[Block] = []
    section, fields, start_field, count = "", 10, 1, 0  # ASS's default Format: Layer, Start, End, ..., Text
    for n, (at, line) in enumerate(_lines(doc.text), 1):
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped.lower()
            continue
        if section != "[events]":
            continue
        key, _, rest = line.partition(":")
        if key.strip() == "Format":
            names = [f.strip().lower() for f in rest.split(",")]
            fields = len(names)
            start_field = names.index("start") if "start" in names else 1
            continue
        if key.strip() != "Dialogue":
            continue
        count += 1
        values = rest.split(",", fields - 1)
        if len(values) < fields:
            continue
        text = values[-1]
        offset = at + len(line) - len(text)
        doc.places[n] = f"cue {count} ({values[start_field].strip()})"
        if (b := block_of(_pieces(text, offset))) is not None:
            blocks.append(b)
    return blocks
