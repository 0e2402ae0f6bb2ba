"""The findings in each output format: ``text`` (for people), ``json``, ``jsonl``, ``sarif`` (2.1.0, for code
scanning), ``rdjson`` (reviewdog) and ``github`` (workflow annotations). Lines and columns are 1-based and count
code points, except where a format defines its own unit (reviewdog: UTF-8 bytes)."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from .check import RULES, Finding

FORMATS = ("text", "json", "jsonl", "sarif", "rdjson", "github")
TOOL = "electra-csc"
INFO_URI = "https://github.com/electra-csc/electra-csc"
REASON_WORDS = {"pinyin": "similar sound", "shape": "similar shape", "other": "context",
                "script": "traditional character in simplified text"}


def render(fmt: str, findings: Sequence[Finding], *, version: str = "", model: str = "", color: bool = False,
           files: int = 0) -> str:
    writers: dict[str, Callable[..., str]] = {"text": _text, "json": _json, "jsonl": _jsonl, "sarif": _sarif,
                                              "rdjson": _rdjson, "github": _github}
    return writers[fmt](findings, version=version, model=model, color=color, files=files)


def headline(f: Finding) -> str:
    where = f", in a {f.where}" if f.where else ""
    place = f", at {f.place}" if f.place else ""
    return f"{f.path}:{f.line}:{f.column}: {f.change} ({f.confidence:.2f}, {f.reason}{where}{place})"


def _width(s: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)


def _text(findings: Sequence[Finding], color: bool, files: int, **_: Any) -> str:
    out = []
    for f in findings:
        also = f"; or {'/'.join(f.alternatives)}" if f.alternatives else ""
        head = headline(f)[:-1] + also + ")"
        context, column = f.snippet
        line = context.expandtabs(1)
        before = line[:column - 1]
        mark = " " * _width(before) + "^" * max(1, _width(f.source))
        if color:
            head = f"\x1b[1m{head}\x1b[0m"
            line = before + f"\x1b[31;1m{f.source}\x1b[0m" + line[column - 1 + len(f.source):]
            mark = f"\x1b[31m{mark}\x1b[0m"
        out += [head, f"    {line}", f"    {mark}"]
    n = len(findings)
    out.append(f"{n} finding{'s' if n != 1 else ''} in {len({f.path for f in findings})} of {files} file"
               f"{'s' if files != 1 else ''}" + (f" ({sum(f.fix for f in findings)} fixable with --fix)" if n else ""))
    return "\n".join(out) + "\n"


def _json(findings: Sequence[Finding], version: str, model: str, files: int, **_: Any) -> str:
    return json.dumps({"tool": TOOL, "version": version, "model": model, "files": files,
                       "findings": [f.to_dict() for f in findings]}, ensure_ascii=False, indent=1) + "\n"


def _jsonl(findings: Sequence[Finding], **_: Any) -> str:
    return "".join(json.dumps(f.to_dict(), ensure_ascii=False) + "\n" for f in findings)


def _sarif(findings: Sequence[Finding], version: str, model: str, **_: Any) -> str:
    rules = [{"id": rule, "name": rule.title().replace("-", ""),
              "shortDescription": {"text": f"A likely Chinese spelling slip ({REASON_WORDS[reason]})"},
              "helpUri": INFO_URI, "defaultConfiguration": {"level": "warning"}}
             for reason, rule in RULES.items()]
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in findings:
        region = {"startLine": f.line, "startColumn": f.column, "endLine": f.line,
                  "endColumn": f.column + len(f.source)}
        also = f"; or {', '.join(f.alternatives)}" if f.alternatives else ""
        results.append({
            "ruleId": f.rule, "ruleIndex": index.get(f.rule, 0), "level": "warning",
            "message": {"text": f"{f.change.replace('→', ' → ')} ({REASON_WORDS.get(f.reason, f.reason)}, confidence "
                                f"{f.confidence:.2f}{also}{f', at {f.place}' if f.place else ''})"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                                                "region": {**region, "snippet": {"text": f.snippet[0]}}},
                           **({"logicalLocations": [{"fullyQualifiedName": f.place, "kind": "text"}]}
                              if f.place else {})}],
            "partialFingerprints": {"electraCsc/v1": f.fingerprint},
            "fixes": [{"description": {"text": f"Replace {f.source} with {f.target}"},
                       "artifactChanges": [{"artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                                            "replacements": [{"deletedRegion": region,
                                                              "insertedContent": {"text": f.target}}]}]}],
            "properties": {"confidence": f.confidence, "alternatives": list(f.alternatives)},
        })
    run = {"tool": {"driver": {"name": TOOL, "version": version or "0", "informationUri": INFO_URI, "rules": rules,
                               "properties": {"model": model}}},
           "columnKind": "unicodeCodePoints", "results": results}
    return json.dumps({"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
                       "runs": [run]}, ensure_ascii=False, indent=1) + "\n"


def _rdjson(findings: Sequence[Finding], **_: Any) -> str:
    def byte_col(f: Finding, column: int) -> int:
        return len(f.context[:column - 1].encode("utf-8")) + 1

    diagnostics = []
    for f in findings:
        span = {"start": {"line": f.line, "column": byte_col(f, f.column)},
                "end": {"line": f.line, "column": byte_col(f, f.column + len(f.source))}}
        diagnostics.append({
            "message": f"{f.change} ({REASON_WORDS.get(f.reason, f.reason)}, confidence {f.confidence:.2f})",
            "location": {"path": f.path, "range": span}, "severity": "WARNING",
            "code": {"value": f.rule, "url": INFO_URI}, "suggestions": [{"range": span, "text": f.target}],
            "original_output": headline(f)})
    return json.dumps({"source": {"name": TOOL, "url": INFO_URI}, "severity": "WARNING", "diagnostics": diagnostics},
                      ensure_ascii=False) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _github(findings: Sequence[Finding], **_: Any) -> str:
    return "".join(
        f"::warning file={_escape_property(f.path)},line={f.line},col={f.column},endColumn={f.column + len(f.source)},"
        f"title={_escape_property(f'{TOOL} ({f.rule})')}::"
        f"{_escape_data(f'{f.change} (confidence {f.confidence:.2f}, {REASON_WORDS.get(f.reason, f.reason)})')}\n"
        for f in findings)
