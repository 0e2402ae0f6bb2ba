"""From files to findings: every file's prose blocks corrected together, each edit put back at its line and column.

``check`` reads each target, looks it up in the cache (``cache.py``: its bytes, the bundle and the settings that apply
to it), extracts the blocks of the files that miss, corrects all their texts through the corrector's public stages
(``prepare``, ``score``, ``decide``: the same edits as ``correct_batch``, and the next candidates as alternatives), one
pass per distinct set of settings, and keeps the edits that lie in prose, on lines no inline comment disables, at or
above the report confidence.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from corrector.evidence.terms import OWN, recurring

from .document import Block, Document, DocumentError
from .extract import DOCUMENT_MODULES, blocks_of, read_documents
from .project_config import FileSettings, LintConfig
from .walk import Target

DIRECTIVE = re.compile(r"electra-csc:\s*(disable-next-line|disable-line|disable|enable)\b")
CONTEXT_CHARS = 160  # a finding's context in a report: its line, or this many characters of it around the finding
RULES = {"pinyin": "similar-sound", "shape": "similar-shape", "other": "context", "script": "traditional-character"}


@dataclass(frozen=True)
class Finding:
    """One edit the corrector proposes in a file."""

    path: str
    offset: int  # in the file's text, in code points
    line: int  # 1-based
    column: int  # 1-based, in code points
    source: str  # as written
    target: str  # suggested
    confidence: float
    reason: str
    alternatives: tuple[str, ...]
    context: str  # the line, without its ending
    fix: bool  # at or above the fix confidence, and so is every other finding in its word
    word: str = ""  # the word it changes, as written (``words_of``; the character alone when it is no word's)
    word_target: str = ""  # ... and as suggested, with every finding in it
    word_column: int = 0  # the word's 1-based column
    where: str = ""  # "" in running prose; else what the text is: heading, link text, table cell, label, ...
    place: str = ""  # where a person finds it when the line does not say: "paragraph 12, character 5" in a Word
    #                  document, "cue 14 (00:01:02,500), character 3" in subtitles

    @property
    def change(self) -> str:
        """What a report shows: the word as written and as suggested (以经→已经), or the character alone."""
        return f"{self.word or self.source}→{self.word_target or self.target}"

    @property
    def rule(self) -> str:
        return RULES.get(self.reason, self.reason)

    @property
    def fingerprint(self) -> str:
        """Stable while the line's text is unchanged, wherever the line moves (for baselines and code scanning)."""
        key = f"{self.path}\0{self.source}\0{self.target}\0{self.context.strip()}\0{self.column}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    @property
    def snippet(self) -> tuple[str, int]:
        """The context a report shows: the line, or CONTEXT_CHARS characters of a longer one around the finding (a
        minified file's one line, say), and the finding's 1-based column in it."""
        line = self.context
        if len(line) <= CONTEXT_CHARS:
            return line, self.column
        start = max(0, min(self.column - 1 - CONTEXT_CHARS // 2, len(line) - CONTEXT_CHARS))
        return line[start:start + CONTEXT_CHARS], self.column - start

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["alternatives"] = list(self.alternatives)
        out["rule"] = self.rule
        out["context"], at = self.snippet
        out["context_start"] = self.column - at  # where the context begins in the line (0: the whole line)
        return out


@dataclass(frozen=True)
class Raw:
    """An edit as the corrector gave it (before the file's thresholds and directives): what the cache keeps."""

    offset: int
    source: str
    target: str
    confidence: float
    reason: str
    alternatives: tuple[str, ...]
    where: str = ""  # ``Piece.where``: "" in running prose, else what the text is (a heading, a link text, ...)


EditRow = tuple[int, str, str, float, str, tuple[str, ...]]  # position, source, target, confidence, reason,
#                                                              alternatives: one edit as a corrector pass gives it
Correct = Callable[[list[str], dict[str, Any]], list[list[EditRow]]]


def corrector_pass(corrector: Any) -> Correct:
    """A ``Correct`` over a loaded Corrector: per text, its edits (position, source, target, confidence, reason,
    alternatives), through its public stages."""
    from corrector.explain import alternatives
    from corrector.stages import assemble

    def run(texts: list[str], settings: dict[str, Any]) -> list[list[EditRow]]:
        prepared = corrector.prepare(texts, **settings)
        decided = [corrector.decide(s, prepared.settings) for s in corrector.score(prepared)]
        others = alternatives(decided, corrector.vocab)
        return [[(e.position, e.source, e.target, e.confidence, e.reason, others.get((i, e.position), ()))
                 for e in c.edits] for i, c in enumerate(assemble(prepared, decided))]
    return run


def disabled_lines(doc: Document) -> set[int]:
    """1-based lines that inline comments disable: ``electra-csc: disable-line`` (its own line),
    ``disable-next-line``, and ``disable`` … ``enable`` regions, in any comment syntax."""
    off: set[int] = set()
    region_from: int | None = None
    lines = doc.text.split("\n")
    for n, line in enumerate(lines, 1):
        for m in DIRECTIVE.finditer(line):
            what = m.group(1)
            if what == "disable-line":
                off.add(n)
            elif what == "disable-next-line":
                off.add(n + 1)
            elif what == "disable" and region_from is None:
                region_from = n
            elif what == "enable" and region_from is not None:
                off.update(range(region_from, n + 1))
                region_from = None
    if region_from is not None:
        off.update(range(region_from, len(lines) + 1))
    return off


def raw_edits(blocks: Sequence[Block], doc: Document,
              corrected: Sequence[Sequence[EditRow]]) -> list[Raw]:
    """The edits of ``blocks`` (``corrected``: each block's) that lie in prose, at their offsets in ``doc``."""
    out = []
    for block, edits in zip(blocks, corrected):
        for position, source, target, confidence, reason, others in edits:
            at = block.locate(position, len(source))
            if at is None or doc.text[at:at + len(source)] != source:
                continue
            out.append(Raw(at, source, target, round(float(confidence), 4), reason, tuple(others),
                           block.where(position)))
    return sorted(set(out), key=lambda r: r.offset)


def findings_of(doc: Document, raws: Sequence[Raw], settings: FileSettings, report: float | None) -> list[Finding]:
    """``raws`` as findings of ``doc``: those at or above the report confidence (``report``: the command line's, else
    the file's, else all the corrector gave), off the disabled lines."""
    floor = report if report is not None else settings.threshold
    off = disabled_lines(doc)
    out = []
    for r in raws:
        line, column = doc.line_col(r.offset)
        if line in off or (floor is not None and r.confidence < floor):
            continue
        out.append(Finding(doc.path, r.offset, line, column, r.source, r.target, r.confidence, r.reason,
                           r.alternatives, doc.line_text(line), r.confidence >= settings.fix, where=r.where,
                           place=doc.place(line, column)))
    return whole_words(words_of(out))


def words_of(findings: Sequence[Finding]) -> list[Finding]:
    """Each finding with the word it changes: the dictionary word (jieba's) of its line, as the findings in the line
    would correct it, that holds it (以经 in 他以经走了, which reads 他/已经/走/了), else the word as written that
    does (适用 for 适用→使用), else the character alone."""
    from corrector.evidence.dictionary import tokenizer

    by_line: dict[tuple[str, int], list[Finding]] = {}
    for f in findings:
        by_line.setdefault((f.path, f.line), []).append(f)
    out = []
    for group in by_line.values():
        written = group[0].context
        chars = list(written)
        for f in group:
            if written[f.column - 1:f.column - 1 + len(f.source)] == f.source and len(f.source) == len(f.target):
                chars[f.column - 1:f.column - 1 + len(f.source)] = list(f.target)
        corrected = "".join(chars)
        spans = [_spans(tokenizer().lcut(text, HMM=False)) for text in (corrected, written)]
        for f in group:
            at = f.column - 1
            start, end = next(((s, e) for found in spans for s, e in found if s <= at < e and e - s > 1),
                              (at, at + len(f.source)))
            out.append(replace(f, word=written[start:end], word_target=corrected[start:end], word_column=start + 1))
    return sorted(out, key=lambda f: (f.path, f.offset))


def _spans(tokens: list[str]) -> list[tuple[int, int]]:
    out, at = [], 0
    for t in tokens:
        out.append((at, at + len(t)))
        at += len(t)
    return out


def whole_words(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` (with their words) with ``fix`` kept only where every finding of the same word has it: a fix
    writes a word's changes together or none of them, never half a word."""
    fixable: dict[tuple[str, int, int], bool] = {}
    for f in findings:
        key = (f.path, f.line, f.word_column)
        fixable[key] = fixable.get(key, True) and f.fix
    return [f if f.fix == fixable[(f.path, f.line, f.word_column)] else replace(f, fix=False) for f in findings]


def settings_key(settings: FileSettings, kind: str, report: float | None,
                 own: Mapping[str, Sequence[str]] | None = None) -> str:
    """What the corrector's answer for a file depends on besides its bytes and the bundle (``own``: of the tree's
    terms and bigrams, those the file writes)."""
    return json.dumps({"kind": kind, "parts": settings.parts, "decoding": settings.decoding(report),
                       **{name: list(words) for name, words in (own or {}).items() if words}},
                      sort_keys=True, default=list)


@dataclass
class Checked:
    findings: list[Finding]
    documents: dict[str, Document]  # by shown path
    errors: list[str]  # one line each: files that could not be read
    files: int
    chars: int  # characters of prose corrected (cache misses)
    cached: int  # files answered from the cache


@dataclass
class _File:
    target: Target
    doc: Document
    digest: str  # sha256 of its bytes
    settings: FileSettings
    blocks: list[Block] | None = None  # extracted once, when needed

    def prose(self) -> list[Block]:
        if self.blocks is None:
            self.blocks = blocks_of(self.doc, self.target.kind, self.settings.parts)
        return self.blocks


def check(targets: Sequence[Target], config: LintConfig, correct: Callable[[], Correct], *,
          report: float | None = None, cache: Any = None, progress: bool = False) -> Checked:
    """Every target's findings. ``correct`` gives the corrector's pass, called only when some file misses the cache
    (a cached run loads no model).

    First the files' own terms and bigrams (``corrector.evidence.terms``): every file's word and bigram counts
    (cached by its bytes), summed over the files checked, whatever their order; the words written at least
    ``config.terms`` times and the bigrams written at least ``config.bigrams`` times (less those a far commoner
    rival unseats: ``recurring``) are kept as written (the ``terms`` and ``bigrams`` settings) in every file. A
    file's answer depends on its bytes, its settings and the terms and bigrams it writes, so its cache entry is
    keyed by those."""
    docs: dict[str, Document] = {}
    errors: list[str] = []
    files: list[_File] = []
    for t in targets:
        try:
            data = t.path.read_bytes() if str(t.path) != "-" else sys.stdin.buffer.read()
            read = read_documents(t.shown, t.kind, data)
        except (OSError, DocumentError) as e:
            errors.append(str(e) if isinstance(e, DocumentError) else f"{t.shown}: {e.strerror or e}")
            continue
        except ModuleNotFoundError as e:
            if e.name not in DOCUMENT_MODULES:
                raise
            from corrector.model_path import missing_extra

            errors.append(f"{t.shown}: {missing_extra(e, f'reading a {t.kind} file', 'documents')}")
            continue
        for r in read:
            docs[r.shown] = r.doc
            files.append(_File(replace(t, shown=r.shown, kind=r.kind), r.doc, hashlib.sha256(r.data).hexdigest(),
                               config.for_file(t.relative), None if r.blocks is None else list(r.blocks)))
    own = {name: _own(files, name, least, cache) for name, least in config.least.items()}
    todo: dict[str, list[tuple[_File, str]]] = {}  # by the decoding settings
    raws: dict[str, list[Raw]] = {}
    cached = 0
    for f in files:
        skey = settings_key(f.settings, f.target.kind, report, {name: o.written(f) for name, o in own.items()})
        key = f.digest + ":" + hashlib.sha256(skey.encode()).hexdigest()
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            raws[f.target.shown] = hit
            cached += 1
            continue
        todo.setdefault(json.dumps(f.settings.decoding(report), sort_keys=True, default=list), []).append((f, key))
    chars = 0
    if todo:
        run = correct()
        for decoding_json, group in todo.items():
            decoding = json.loads(decoding_json)
            decoding.update({name: o.kept for name, o in own.items() if o.kept})
            texts = [b.text for f, _ in group for b in f.prose()]
            chars += sum(map(len, texts))
            answers = _in_parts(run, texts, decoding, progress)
            at = 0
            for f, key in group:
                blocks = f.prose()
                found = raw_edits(blocks, f.doc, answers[at:at + len(blocks)])
                at += len(blocks)
                raws[f.target.shown] = found
                if cache is not None:
                    cache.put(key, found)
    findings = [x for f in files for x in findings_of(f.doc, raws.get(f.target.shown, []), f.settings, report)]
    return Checked(findings, docs, errors, len(docs), chars, cached)


@dataclass
class _Own:
    """One of the tree's own lists: each file's counts and what the tree keeps (``recurring``)."""

    counts: dict[str, Counter[str]]  # by shown path
    kept: tuple[str, ...]

    @functools.cached_property
    def is_kept(self) -> frozenset[str]:
        return frozenset(self.kept)

    def written(self, f: _File) -> list[str]:
        """What ``f`` writes of the kept ones, sorted."""
        return sorted(w for w in self.counts.get(f.target.shown, ()) if w in self.is_kept)


def _own(files: list[_File], name: str, least: int, cache: Any) -> _Own:
    """The tree's ``name`` list (``terms`` or ``bigrams``): those written at least ``least`` times (0: none)."""
    if not least:
        return _Own({}, ())
    counts = {f.target.shown: _counts(f, name, cache) for f in files}
    tree: Counter[str] = Counter()
    for c in counts.values():
        tree.update(c)
    return _Own(counts, recurring(tree, least))


def _counts(f: _File, name: str, cache: Any) -> Counter[str]:
    """How often ``f``'s prose writes each word or bigram (``OWN[name]``'s counter, ``corrector.evidence.terms``),
    from the cache when its bytes and the way it is read are unchanged."""
    count = OWN[name][0]
    prefix = "words:" if name == "terms" else f"{name}:"  # the terms' entries keep the name they were first cached by
    key = prefix + f.digest + ":" + json.dumps([f.target.kind, f.settings.parts])
    hit = cache.get_words(key) if cache is not None else None
    if hit is not None:
        return Counter(hit)
    counts = count(b.text for b in f.prose())
    if cache is not None:
        cache.put_words(key, dict(counts))
    return counts


def _in_parts(run: Correct, texts: list[str], decoding: dict[str, Any], progress: bool,
              part_chars: int = 200_000) -> list[list[EditRow]]:
    """``run`` over ``texts`` in parts of about ``part_chars`` characters (a bar on stderr with ``progress``): the
    answers do not depend on how the texts are grouped."""
    parts: list[list[str]] = [[]]
    size = 0
    for t in texts:
        if size >= part_chars:
            parts.append([])
            size = 0
        parts[-1].append(t)
        size += len(t)
    out: list[list[EditRow]] = []
    from tqdm import tqdm

    with tqdm(total=sum(map(len, texts)), unit="char", unit_scale=True, disable=not progress, file=sys.stderr,
              desc="checking") as bar:
        for part in parts:
            if part:
                out += run(part, decoding)
                bar.update(sum(map(len, part)))
    return out
