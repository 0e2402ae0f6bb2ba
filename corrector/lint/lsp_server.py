"""``python -m corrector lsp``: the linter as a language server (pygls, over stdio), for any editor with an LSP client.

* Diagnostics on open, change (debounced) and save. Only the blocks whose text changed are corrected again: every
  block's edits are kept by its text and settings, so typing in one paragraph re-checks that paragraph alone.
* Positions in the encoding the client asks for (UTF-16 unless it offers UTF-8 or UTF-32): a character outside the
  Basic Multilingual Plane before a slip shifts nothing.
* Code actions: replace with the suggestion or an alternative; ignore the word in this project (appended to the
  project's word list, ``.electra-csc-words.txt``, which the configuration reads); disable the check on this line
  (an inline comment in the file's comment syntax); fix all edits at or above the fix confidence (``source.fixAll``).
* Settings: the project's configuration (``corrector/lint/project_config.py``), and the client's initialization
  options or ``electra-csc`` settings: ``model``, ``threshold`` (``minConfidence``, its old name, is still read),
  ``fixConfidence``, ``debounceMs``. A change of
  either, or a save of a configuration file, reloads them and checks the open documents again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from corrector.evidence.terms import own_lists

from .check import (
    Correct,
    EditRow,
    Finding,
    corrector_pass,
    findings_of,
    raw_edits,
    settings_key,
    whole_words,
)
from .document import Document
from .extract import blocks_of, kind_of
from .project_config import FILE_NAMES, WORDS_FILE, ConfigError, LintConfig, find_config
from .report import REASON_WORDS

log = logging.getLogger(__name__)
SOURCE = "electra-csc"
DEBOUNCE_MS = 300
CACHED_BLOCKS = 50_000
LINE_COMMENTS = {"python": "#", "shell": "#", "bash": "#", "yaml": "#", "toml": "#", "ruby": "#", "perl": "#",
                 "r": "#", "makefile": "#", "c": "//", "cpp": "//", "c++": "//", "java": "//", "javascript": "//",
                 "typescript": "//", "go": "//", "rust": "//", "kotlin": "//", "swift": "//", "scala": "//",
                 "c#": "//", "php": "//", "dart": "//", "sql": "--", "lua": "--", "haskell": "--", "tex": "%",
                 "latex": "%", "matlab": "%", "erlang": "%"}


class _State:
    def __init__(self) -> None:
        self.root = Path.cwd()
        self.config = LintConfig(root=self.root)
        self.options: dict[str, Any] = {}
        self.blocks: OrderedDict[tuple[str, str], list[EditRow]] = OrderedDict()  # (settings, block text) -> its edits
        self.findings: dict[str, list[Finding]] = {}  # uri -> what was published
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="csc-lsp")
        self._pass: asyncio.Future[Correct] | None = None
        self._pass_model: str | None = None  # the bundle the pass was loaded from

    def configure(self, root: Path | None, options: dict[str, Any] | None) -> None:
        if root is not None:
            self.root = root
        if options is not None:
            self.options = dict(options)
        try:
            self.config = find_config(self.root, default_root=self.root)
        except ConfigError as e:
            log.warning("%s", e)
            self.config = LintConfig(root=self.root)
        self.blocks.clear()
        if self.model != self._pass_model:  # another bundle (the client's settings or the configuration's)
            self._pass = None

    @property
    def model(self) -> str | None:
        """The bundle in force: the client's setting, else the configuration's (None: the shipped one)."""
        return self.options.get("model") or self.config.model

    def correct(self) -> asyncio.Future[Correct]:
        """The corrector's pass, loaded once in the worker thread (the first check waits for it)."""
        if self._pass is None:
            model = self._pass_model = self.model

            def load() -> Correct:
                from corrector import Corrector

                return corrector_pass(Corrector.load(model))
            self._pass = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(self.pool, load))
        return self._pass

    async def corrected(self, texts: list[str], key: str, decoding: dict[str, Any]) -> list[list[EditRow]]:
        """Each text's edits: those of texts seen before with the same settings (``key``) as they were, the others
        corrected now, together, in the worker thread."""
        missing = list(dict.fromkeys(t for t in texts if (key, t) not in self.blocks))
        if missing:
            run = await self.correct()
            answers = await asyncio.get_running_loop().run_in_executor(self.pool, run, missing, decoding)
            for text, edits in zip(missing, answers):
                self.blocks[(key, text)] = edits
            while len(self.blocks) > CACHED_BLOCKS:
                self.blocks.popitem(last=False)
        return [self.blocks.get((key, t), []) for t in texts]

    def confidence(self, name: str, old: str | None = None) -> float | None:
        """The client's option ``name`` (else its old name ``old``) when it is a number, else None."""
        value = self.options.get(name, self.options.get(old) if old else None)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def create_server() -> Any:
    from lsprotocol import types  # the 'lint' extra
    from pygls.lsp.server import LanguageServer

    from corrector.model_path import installed_version

    server = LanguageServer(SOURCE, installed_version() or "0+checkout", text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
    state = _State()

    def fs_path(uri: str) -> Path:
        from pygls.uris import to_fs_path

        return Path(to_fs_path(uri) or uri)

    async def check(ls: LanguageServer, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = ls.workspace.get_text_document(uri)
        version, path = doc.version, fs_path(uri)
        kind = kind_of(path.name)
        if kind is None:
            return
        document = Document(str(path), doc.source)
        try:
            relative = path.resolve().relative_to(state.config.root).as_posix()
        except ValueError:
            relative = path.name
        settings = state.config.for_file(relative)
        report = state.confidence("threshold", "minConfidence")
        blocks = blocks_of(document, kind, settings.parts)
        texts = [b.text for b in blocks]
        own = own_lists(texts, state.config.least)  # the document's own (check.py: a tree's)
        key = settings_key(settings, kind, report, own)
        edits = await state.corrected(texts, key, {**settings.decoding(report), **{k: v for k, v in own.items() if v}})
        if ls.workspace.get_text_document(uri).version != version:
            return  # changed meanwhile: the newer check publishes
        raws = raw_edits(blocks, document, edits)
        fix = state.confidence("fixConfidence")
        found = whole_words([f if fix is None else replace(f, fix=f.confidence >= fix)
                             for f in findings_of(document, raws, settings, report)])
        state.findings[uri] = found
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[diagnostic(doc, f) for f in found]))

    def diagnostic(doc: Any, f: Finding) -> Any:
        also = f"; or {'/'.join(f.alternatives)}" if f.alternatives else ""
        return types.Diagnostic(
            range=types.Range(doc.client_position_at_offset(f.offset),
                              doc.client_position_at_offset(f.offset + len(f.source))),
            message=f"{f.change} ({REASON_WORDS.get(f.reason, f.reason)}, {f.confidence:.2f}{also})",
            severity=types.DiagnosticSeverity.Warning, source=SOURCE, code=f.rule,
            data={"offset": f.offset, "target": f.target, "alternatives": list(f.alternatives), "fix": f.fix})

    def schedule(ls: LanguageServer, uri: str, delay: float) -> None:
        if (old := state.pending.get(uri)) is not None:
            old.cancel()
        state.pending[uri] = asyncio.ensure_future(check(ls, uri, delay))

    def recheck_all(ls: LanguageServer) -> None:
        for uri in list(ls.workspace.text_documents):
            schedule(ls, uri, 0)

    def debounce() -> float:
        value = state.options.get("debounceMs", DEBOUNCE_MS)
        return max(0.0, float(value)) / 1000 if isinstance(value, (int, float)) else DEBOUNCE_MS / 1000

    @server.feature(types.INITIALIZE)
    def initialize(ls: LanguageServer, params: types.InitializeParams) -> None:
        folders = params.workspace_folders or []
        uri = folders[0].uri if folders else params.root_uri
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        state.configure(fs_path(uri) if uri else None, options)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, debounce())

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        if fs_path(params.text_document.uri).name in (*FILE_NAMES, WORDS_FILE):
            state.configure(None, None)
            recheck_all(ls)
        else:
            schedule(ls, params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if (task := state.pending.pop(uri, None)) is not None:
            task.cancel()
        state.findings.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: LanguageServer, params: types.DidChangeConfigurationParams) -> None:
        given = params.settings.get(SOURCE) if isinstance(params.settings, dict) else None
        state.configure(None, {**state.options, **given} if isinstance(given, dict) else None)
        recheck_all(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls: LanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(fs_path(c.uri).name in (*FILE_NAMES, WORDS_FILE) for c in params.changes):
            state.configure(None, None)
            recheck_all(ls)

    @server.command("electra-csc.ignoreWord")
    def ignore_word(ls: Any, word: str) -> None:  # (annotations pygls can resolve: it types the arguments by them)
        if word:
            words = state.config.root / WORDS_FILE
            with words.open("a", encoding="utf-8") as out:
                out.write(word + "\n")
            state.configure(None, None)
            recheck_all(ls)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]))
    def code_action(ls: LanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        found = state.findings.get(uri, [])
        actions: list[types.CodeAction] = []
        wanted = params.context.only
        if not wanted or any(k.startswith(types.CodeActionKind.QuickFix) for k in wanted):
            comment = _disable_comment(fs_path(uri).name)
            for f in found:
                shown = diagnostic(doc, f)
                span = shown.range
                if not _overlaps(span, params.range):
                    continue
                for i, target in enumerate((f.target, *f.alternatives)):
                    actions.append(types.CodeAction(
                        title=f"Replace {f.source} with {target}", kind=types.CodeActionKind.QuickFix,
                        is_preferred=i == 0, diagnostics=[shown],
                        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(span, target)]})))
                word = _word_at(f)
                actions.append(types.CodeAction(
                    title=f"Ignore “{word}” in this project", kind=types.CodeActionKind.QuickFix,
                    command=types.Command(title=f"Ignore “{word}”", command="electra-csc.ignoreWord", arguments=[word])))
                if comment:
                    end = doc.client_position_at_offset(f.offset - (f.column - 1) + len(f.context))
                    actions.append(types.CodeAction(
                        title=f"Disable {SOURCE} on this line", kind=types.CodeActionKind.QuickFix,
                        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(types.Range(end, end), comment)]})))
        if not wanted or any(k.startswith(types.CodeActionKind.SourceFixAll) for k in wanted):
            fixes = [types.TextEdit(diagnostic(doc, f).range, f.target) for f in found if f.fix]
            if fixes:
                actions.append(types.CodeAction(title=f"Fix all confident slips ({len(fixes)})",
                                                kind=types.CodeActionKind.SourceFixAll,
                                                edit=types.WorkspaceEdit(changes={uri: fixes})))
        return actions

    return server


def _overlaps(a: Any, b: Any) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def _word_at(f: Finding) -> str:
    """The word the slip stands in, as jieba cuts its line (with the next character when it stands alone)."""
    import jieba

    at = 0
    for word in jieba.lcut(f.context, HMM=False):
        if at <= f.column - 1 < at + len(word):
            if len(word) == 1 and f.column < len(f.context):
                return f.context[f.column - 1:f.column + 1]
            return word
        at += len(word)
    return f.source


def _disable_comment(name: str) -> str | None:
    """The inline comment that disables the check on a line of this kind of file, or None."""
    kind = kind_of(name)
    if kind in ("markdown", "html"):
        return " <!-- electra-csc: disable-line -->"
    if kind in ("code", "data"):
        from .code import lexer_for

        lexer = lexer_for(name)
        mark = LINE_COMMENTS.get(lexer.name.lower()) if lexer is not None else None
        if mark is None and lexer is not None:
            mark = next((LINE_COMMENTS[a] for a in lexer.aliases if a in LINE_COMMENTS), None)
        return f"  {mark} electra-csc: disable-line" if mark else None
    return None


def main(argv: list[str]) -> int:
    import sys

    if argv and argv[0] in ("-h", "--help"):
        sys.stdout.write(f"usage: python -m corrector lsp [--stdio]\n{__doc__}")
        return 0
    if argv and argv != ["--stdio"]:
        sys.stderr.write(f"error: unexpected arguments {argv} (the server speaks LSP on stdio)\n")
        return 2
    create_server().start_io()
    return 0
