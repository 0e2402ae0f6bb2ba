"""Input files -> shards (fixed runs of lines or rows) -> records; a bad line becomes an error record.

A text or JSONL file is cut every ``shard_size`` lines (only ``\\n`` ends a line, as in the CLI), a
Parquet file every ``shard_size`` rows. A shard knows its byte (or row) range, so any process that can
see the file reads exactly its own lines, and shard numbers follow input order across files.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from corrector.model_path import install_hint
from corrector.types import CorrectorError

INPUT_FORMATS = ("auto", "text", "jsonl", "parquet")
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
SCAN_BYTES = 1 << 20


class Record(TypedDict):
    """One input text on its way to the Corrector; ``error`` is non-empty for a bad line (then text is "")."""

    shard: int
    line: int  # 1-based line number in its file (row number for Parquet)
    id: str  # the row's id field as JSON, "" when it has none
    text: str
    error: str


@dataclass(frozen=True)
class InputFile:
    path: str  # as opened
    name: str  # as written into output rows and errors.jsonl
    format: str  # text | jsonl | parquet


@dataclass(frozen=True)
class Shard:
    index: int
    path: str
    name: str
    format: str
    start: int  # byte offset (text, jsonl) or row index (parquet) of its first line
    stop: int  # end of its range, exclusive
    first_line: int  # 1-based line (row) number of its first line
    lines: int  # lines (rows) in the range

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReadOptions:
    text_field: str = "text"
    id_field: str = "id"
    max_chars: int = 100_000  # longer texts are reported as errors, not corrected

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---- finding files and cutting shards -------------------------------------------------------------


def find_inputs(spec: str, input_format: str = "auto") -> list[InputFile]:
    """A file, a directory (every file under it, sorted; names starting with '.' or '_' skipped) or a glob."""
    root = Path(spec)
    if root.is_dir():
        paths = sorted(p for p in root.rglob("*") if p.is_file() and not _hidden(p.relative_to(root)))
        files = [(str(p), p.relative_to(root).as_posix()) for p in paths]
    elif root.is_file():
        files = [(spec, spec)]
    elif glob.has_magic(spec):
        files = [(p, p) for p in sorted(glob.glob(spec, recursive=True)) if Path(p).is_file()]
        if not files:
            raise CorrectorError(f"no files match {spec}")
    else:
        raise CorrectorError(f"input not found: {spec}")
    if not files:
        raise CorrectorError(f"no input files in {spec}")
    return [InputFile(path, name, _format_of(path, input_format)) for path, name in files]


def _hidden(rel: Path) -> bool:
    return any(part.startswith((".", "_")) for part in rel.parts)


def _format_of(path: str, input_format: str) -> str:
    if input_format != "auto":
        return input_format
    return SUFFIXES.get(Path(path).suffix.lower(), "text")


def plan_shards(files: list[InputFile], shard_size: int, opts: ReadOptions) -> list[Shard]:
    """Every file's shards, numbered in input order."""
    shards: list[Shard] = []
    for f in files:
        if f.format == "parquet":
            ranges = _parquet_ranges(f, shard_size, opts)
        else:
            ranges = _line_ranges(f, shard_size)
        for start, stop, first, n in ranges:
            shards.append(Shard(len(shards), f.path, f.name, f.format, start, stop, first, n))
    return shards


def _line_ranges(f: InputFile, every: int) -> list[tuple[int, int, int, int]]:
    """(start byte, stop byte, first line, lines) for runs of ``every`` lines; one pass over the bytes."""
    cuts = [0]  # byte offsets where a shard starts
    done = 0  # lines ended so far
    pos = 0
    next_cut = every
    last = b""
    try:
        with open(f.path, "rb") as fh:
            while chunk := fh.read(SCAN_BYTES):
                n = chunk.count(b"\n")
                if done + n < next_cut:
                    done += n
                else:
                    i = -1
                    for _ in range(n):
                        i = chunk.index(b"\n", i + 1)
                        done += 1
                        if done == next_cut:
                            cuts.append(pos + i + 1)
                            next_cut += every
                pos += len(chunk)
                last = chunk[-1:]
    except OSError as e:
        raise CorrectorError(f"cannot read {f.path}: {e.strerror}") from None
    size = pos
    if size == 0:
        return []
    total = done + (0 if last == b"\n" else 1)  # a last line without its newline still counts
    if cuts[-1] == size:
        cuts.pop()
    bounds = [*cuts, size]
    return [(bounds[k], bounds[k + 1], k * every + 1, min(every, total - k * every)) for k in range(len(cuts))]


def _parquet_ranges(f: InputFile, every: int, opts: ReadOptions) -> list[tuple[int, int, int, int]]:
    pf = _open_parquet(f.path, f.name)
    names = pf.schema_arrow.names
    if opts.text_field not in names:
        raise CorrectorError(f"{f.name}: no column '{opts.text_field}' (columns: {', '.join(names)}); "
                             "pick one with --text-field")
    rows = pf.metadata.num_rows
    return [(s, min(s + every, rows), s + 1, min(every, rows - s)) for s in range(0, rows, every)]


def _open_parquet(path: str, name: str):
    pq = parquet_module()
    try:
        return pq.ParquetFile(path)
    except OSError as e:
        raise CorrectorError(f"cannot read {name}: {e}") from None
    except Exception as e:  # pyarrow.ArrowInvalid and friends for a file that is not Parquet
        raise CorrectorError(f"{name} is not a readable Parquet file: {str(e).splitlines()[0][:200]}") from None


def integer_ids(files: list[InputFile], id_field: str) -> bool:
    """Whether every input is Parquet with an integer ``id_field`` column (the output keeps such ids integers)."""
    if not files or any(f.format != "parquet" for f in files):
        return False
    import pyarrow as pa

    for f in files:
        schema = _open_parquet(f.path, f.name).schema_arrow
        if id_field not in schema.names or not pa.types.is_integer(schema.field(id_field).type):
            return False
    return True


def parquet_module():
    """pyarrow.parquet, or a clear error when the 'distributed' extra is not installed."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CorrectorError(
            f"Parquet input or output needs pyarrow: {install_hint('distributed')}"
        ) from None
    return pq


# ---- reading one shard ----------------------------------------------------------------------------


def read_shard(shard: Shard, opts: ReadOptions) -> Iterator[Record]:
    """The shard's records in order: one per text line, JSONL object or Parquet row (blank JSONL lines skipped)."""
    if shard.format == "parquet":
        yield from _parquet_records(shard, opts)
        return
    # a line of more than max_chars characters has more than 4 * max_chars bytes; JSON escapes take up to 6
    limit = 4 * (opts.max_chars + 1) + 1 if shard.format == "text" else 6 * (opts.max_chars + 1) + 65536
    too_long = f"line longer than {opts.max_chars} characters" if shard.format == "text" else \
        f"line longer than {limit} bytes"
    for line, raw in _raw_lines(shard, limit):
        if raw is None:
            yield _bad(shard, line, too_long)
        elif shard.format == "text":
            yield _text_record(shard, line, raw, opts)
        elif raw.strip():
            yield _json_record(shard, line, raw, opts)


def _raw_lines(shard: Shard, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes without the newline), or None for a line longer than ``limit`` bytes."""
    with open(shard.path, "rb") as fh:
        fh.seek(shard.start)
        pos, line = shard.start, shard.first_line
        while pos < shard.stop:
            raw = fh.readline(limit)
            if not raw:
                return  # the file shrank since it was planned
            pos += len(raw)
            if len(raw) == limit and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line, a block at a time
                    raw = fh.readline(SCAN_BYTES)
                    pos += len(raw)
                yield line, None
            else:
                yield line, raw[:-1] if raw.endswith(b"\n") else raw
            line += 1


def _bad(shard: Shard, line: int, reason: str) -> Record:
    return Record(shard=shard.index, line=line, id="", text="", error=reason)


def _text_record(shard: Shard, line: int, raw: bytes, opts: ReadOptions) -> Record:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return _bad(shard, line, f"invalid UTF-8 at byte {e.start}")
    return _checked(shard, line, text, "", opts)


def _json_record(shard: Shard, line: int, raw: bytes, opts: ReadOptions) -> Record:
    try:
        row = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return _bad(shard, line, f"invalid UTF-8 at byte {e.start}")
    except ValueError as e:
        return _bad(shard, line, f"invalid JSON: {e}")
    if not isinstance(row, dict):
        return _bad(shard, line, f"expected a JSON object, got {type(row).__name__}")
    if opts.text_field not in row:
        return _bad(shard, line, f"no '{opts.text_field}' field")
    return _checked(shard, line, row[opts.text_field], _id_of(row.get(opts.id_field)), opts)


def _parquet_records(shard: Shard, opts: ReadOptions) -> Iterator[Record]:
    pf = _open_parquet(shard.path, shard.name)
    cols = [opts.text_field] + ([opts.id_field] if opts.id_field in pf.schema_arrow.names else [])
    row = 0  # first row of the current row group
    for g in range(pf.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        if row + n > shard.start and row < shard.stop:
            lo, hi = max(shard.start - row, 0), min(shard.stop - row, n)
            table = pf.read_row_group(g, columns=cols).slice(lo, hi - lo)
            texts = table.column(opts.text_field).to_pylist()
            ids = table.column(opts.id_field).to_pylist() if len(cols) > 1 else [None] * len(texts)
            for i, (text, rid) in enumerate(zip(texts, ids)):
                line = row + lo + i + 1
                if isinstance(text, bytes):
                    try:
                        text = text.decode("utf-8")
                    except UnicodeDecodeError as e:
                        yield _bad(shard, line, f"invalid UTF-8 at byte {e.start}")
                        continue
                yield _checked(shard, line, text, _id_of(rid), opts)
        row += n
        if row >= shard.stop:
            return


def _id_of(value: object) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _checked(shard: Shard, line: int, text: object, rid: str, opts: ReadOptions) -> Record:
    field = opts.text_field
    if text is None:
        return _bad(shard, line, f"'{field}' is null")
    if not isinstance(text, str):
        return _bad(shard, line, f"'{field}' is not a string ({type(text).__name__})")
    if len(text) > opts.max_chars:
        return _bad(shard, line, f"line longer than {opts.max_chars} characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return _bad(shard, line, f"'{field}' is not valid Unicode (lone surrogate at character {e.start})")
    return Record(shard=shard.index, line=line, id=rid, text=text, error="")
