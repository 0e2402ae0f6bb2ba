"""The output directory: ordered shards written atomically, the state a rerun resumes from, the report.

    DIR/part-00000.jsonl ...   one per input shard, rows in input order (or .parquet)
    DIR/errors.jsonl           every bad line: file, line, reason (rebuilt at the end of each run)
    DIR/summary.json           lines in, corrected, changed, errors, lines/s
    DIR/_state/job.json        what the job is (inputs, shard size, model, settings): a rerun must match
    DIR/_state/part-00000.json the shard's counts and bad lines, renamed into place before its part file

A shard counts as done only when both its part file and its state file exist; both are written under
a temporary name and renamed, so a killed run never leaves a half-written shard that looks complete.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from corrector.batch.engines import Result
from corrector.batch.inputs import Shard, parquet_module
from corrector.types import CorrectorError

OUTPUT_FORMATS = ("jsonl", "parquet")
STATE = "_state"
TMP = ".tmp"
PARQUET_ROWS = 1024  # rows buffered before a Parquet row group is written


@dataclass
class ShardStats:
    lines: int = 0  # records read: corrected + errors
    corrected: int = 0
    changed: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "corrected": self.corrected, "changed": self.changed, "errors": self.errors}


class OutputDir:
    def __init__(self, root: Path, fmt: str, n_shards: int, integer_ids: bool = False):
        """``integer_ids``: the inputs' ids are integers (``inputs.integer_ids``): Parquet parts keep them so."""
        self.root = root
        self.fmt = fmt
        self.integer_ids = integer_ids
        self.width = max(5, len(str(max(n_shards - 1, 0))))  # names sort in input order
        self.state = root / STATE

    def part(self, index: int) -> Path:
        return self.root / f"part-{index:0{self.width}d}.{self.fmt}"

    def state_file(self, index: int) -> Path:
        return self.state / f"part-{index:0{self.width}d}.json"

    def prepare(self, job: dict[str, Any]) -> None:
        """Create the directory, or check that the job it holds is this one; drop leftover temporary files."""
        try:
            self.state.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CorrectorError(f"cannot create {self.root}: {e.strerror}") from None
        path = self.state / "job.json"
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            if old != job:
                keys = sorted(k for k in {*old, *job} if old.get(k) != job.get(k))
                raise CorrectorError(
                    f"{self.root} holds the shards of another job (different {', '.join(keys)}); "
                    "rerun with the same input and settings to resume, or use a new --output")
        else:
            _write_atomic(path, json.dumps(job, ensure_ascii=False, indent=1) + "\n")
        for d in (self.root, self.state):
            for tmp in d.glob(f".*{TMP}"):
                tmp.unlink()

    def done(self, index: int) -> bool:
        return self.part(index).exists() and self.state_file(index).exists()

    def stats(self, index: int) -> ShardStats:
        d = json.loads(self.state_file(index).read_text(encoding="utf-8"))
        return ShardStats(d["lines"], d["corrected"], d["changed"], d["errors"])

    def write(self, pending: list[Shard], rows: Iterable[Result], progress: Any = None) -> int:
        """Write the pending shards from ``rows`` (in input order); returns the rows corrected."""
        shards = iter(pending)
        writer: _ShardWriter | None = None
        corrected = 0
        for row in rows:
            while writer is None or row["shard"] != writer.shard.index:
                if writer is not None:
                    self._finish(writer)
                shard = next(shards, None)
                if shard is None or shard.index > row["shard"]:
                    raise RuntimeError(f"row of shard {row['shard']} out of order")  # an engine bug, not input
                writer = self._open(shard)
            writer.add(row)
            corrected += not row["error"]
            if progress is not None:
                progress.update(1)
        if writer is not None:
            self._finish(writer)
        for shard in shards:  # shards with no rows at all (e.g. only blank JSONL lines)
            self._finish(self._open(shard))
        return corrected

    def _open(self, shard: Shard) -> _ShardWriter:
        part = self.part(shard.index)
        tmp = part.with_name(f".{part.name}{TMP}")
        return _ParquetShard(shard, tmp, self.integer_ids) if self.fmt == "parquet" else _JsonlShard(shard, tmp)

    def _finish(self, w: _ShardWriter) -> None:
        w.close()
        _write_atomic(self.state_file(w.shard.index), json.dumps(w.stats.to_dict(), ensure_ascii=False) + "\n")
        os.replace(w.tmp, self.part(w.shard.index))  # last: from here on the shard is done

    def report(self, n_shards: int, summary: dict[str, Any]) -> dict[str, Any]:
        """errors.jsonl and summary.json over every shard (this run's and earlier runs')."""
        totals = ShardStats()
        with _AtomicText(self.root / "errors.jsonl") as f:
            for i in range(n_shards):
                s = self.stats(i)
                totals.lines += s.lines
                totals.corrected += s.corrected
                totals.changed += s.changed
                for e in s.errors:
                    f.write(json.dumps(e, ensure_ascii=False) + "\n")
                totals.errors.extend(s.errors)
        out = {"lines_in": totals.lines, "corrected": totals.corrected, "changed": totals.changed,
               "errors": len(totals.errors), **summary}
        _write_atomic(self.root / "summary.json", json.dumps(out, indent=1) + "\n")
        return out


def output_row(shard: Shard, row: Result) -> dict[str, Any]:
    """What a part file holds per text: where it came from, then the CLI's --json fields."""
    out: dict[str, Any] = {"file": shard.name, "line": row["line"]}
    if row["id"]:
        out["id"] = json.loads(row["id"])
    out.update(source=row["text"], target=row["target"], edits=json.loads(row["edits"]))
    return out


class _ShardWriter:
    def __init__(self, shard: Shard, tmp: Path):
        self.shard = shard
        self.tmp = tmp
        self.stats = ShardStats()

    def add(self, row: Result) -> None:
        self.stats.lines += 1
        if row["error"]:
            self.stats.errors.append({"file": self.shard.name, "line": row["line"], "reason": row["error"]})
            return
        self.stats.corrected += 1
        self.stats.changed += row["target"] != row["text"]
        self.write(output_row(self.shard, row))

    def write(self, row: dict[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _JsonlShard(_ShardWriter):
    def __init__(self, shard: Shard, tmp: Path):
        super().__init__(shard, tmp)
        self.f = open(tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by close())

    def write(self, row: dict[str, Any]) -> None:
        self.f.write(json.dumps(row, ensure_ascii=False) + "\n")

    def close(self) -> None:
        _sync_close(self.f)


class _ParquetShard(_ShardWriter):
    """Columns file, line, id (an integer column when the inputs' ids are integers; else a string id as is and any
    other as JSON; null when none), source, target, edits."""

    def __init__(self, shard: Shard, tmp: Path, integer_ids: bool = False):
        super().__init__(shard, tmp)
        import pyarrow as pa

        self.pa = pa
        self.pq = parquet_module()
        edit = pa.struct([("position", pa.int64()), ("source", pa.string()), ("target", pa.string()),
                          ("confidence", pa.float64()), ("reason", pa.string())])
        self.integer_ids = integer_ids
        self.schema = pa.schema([("file", pa.string()), ("line", pa.int64()), ("id", pa.int64() if integer_ids else pa.string()),
                                 ("source", pa.string()), ("target", pa.string()), ("edits", pa.list_(edit))])
        self.writer = self.pq.ParquetWriter(str(tmp), self.schema)
        self.rows: list[dict[str, Any]] = []

    def write(self, row: dict[str, Any]) -> None:
        rid = row.get("id")
        if not self.integer_ids:
            rid = rid if rid is None or isinstance(rid, str) else json.dumps(rid)
        self.rows.append({**row, "id": rid})
        if len(self.rows) >= PARQUET_ROWS:
            self._flush()

    def _flush(self) -> None:
        self.writer.write_table(self.pa.Table.from_pylist(self.rows, schema=self.schema))
        self.rows = []

    def close(self) -> None:
        if self.rows:
            self._flush()
        self.writer.close()  # an empty shard is still a valid Parquet file with the schema
        with open(self.tmp, "rb+") as f:
            os.fsync(f.fileno())


def _sync_close(f: TextIO) -> None:
    f.flush()
    os.fsync(f.fileno())
    f.close()


class _AtomicText:
    """A text file written under a temporary name and renamed into place on success."""

    def __init__(self, path: Path):
        self.path = path
        self.tmp = path.with_name(f".{path.name}{TMP}")

    def __enter__(self) -> TextIO:
        self.f = open(self.tmp, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed by __exit__)
        return self.f

    def __exit__(self, exc_type: object, *rest: object) -> None:
        _sync_close(self.f)
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def _write_atomic(path: Path, text: str) -> None:
    with _AtomicText(path) as f:
        f.write(text)

