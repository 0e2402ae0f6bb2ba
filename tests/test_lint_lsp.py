"""``python -m corrector lsp`` driven by pygls' own client over stdio, with the shipped bundle: diagnostics with
positions in the client's encoding, the code actions and their edits, the project's word list; and the block cache
that re-checks only changed paragraphs (with a corrector pass of known answers)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from lint_fake import FakePass
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from corrector.lint.lsp_server import _State

ROOT = Path(__file__).resolve().parents[1]
TEXT = "𠮷😀他以经知道自己错了。\n"  # two characters outside the BMP before the slip


async def session(root: Path, encodings: list[str], steps) -> None:
    client = LanguageClient("test", "0")
    published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.put_nowait(params)

    await client.start_io(sys.executable, "-m", "corrector", "lsp", cwd=str(root),
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        caps = types.ClientCapabilities(general=types.GeneralClientCapabilities(position_encodings=encodings))
        result = await client.initialize_async(types.InitializeParams(
            # fixConfidence: the shipped model's confidence in this slip (0.83) moves with each bundle's calibration;
            # what is tested is that fix-all takes the edits at or above the client's bar
            capabilities=caps, root_uri=root.as_uri(), initialization_options={"debounceMs": 0, "fixConfidence": 0.5}))
        client.initialized(types.InitializedParams())
        await asyncio.wait_for(steps(client, published, result), 120)
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


@pytest.mark.parametrize("encoding,column", [("utf-16", 5), ("utf-32", 3)])
def test_diagnostics_code_actions_and_the_project_word_list(tmp_path, encoding, column):
    page = tmp_path / "a.md"
    page.write_text(TEXT, encoding="utf-8")
    uri = page.as_uri()

    async def steps(client, published, result) -> None:
        assert result.capabilities.position_encoding == encoding
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "markdown", 1, TEXT)))
        params = await published.get()
        [d] = params.diagnostics
        assert (d.range.start.line, d.range.start.character, d.range.end.character) == (0, column, column + 1)
        assert d.source == "electra-csc" and d.message.startswith("以经→已经")
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), d.range, types.CodeActionContext([d])))
        titles = [a.title for a in actions]
        assert titles[0] == "Replace 以 with 已" and actions[0].is_preferred
        assert actions[0].edit.changes[uri][0].range == d.range and actions[0].edit.changes[uri][0].new_text == "已"
        assert "Disable electra-csc on this line" in titles and "Ignore “以经” in this project" in titles
        disable = next(a for a in actions if a.title.startswith("Disable"))
        assert disable.edit.changes[uri][0].new_text == " <!-- electra-csc: disable-line -->"
        fix_all = await client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), d.range, types.CodeActionContext([], only=[types.CodeActionKind.SourceFixAll])))
        assert [e.new_text for e in fix_all[0].edit.changes[uri]] == ["已"]
        # a change re-publishes; then "ignore" writes the word list, and the finding goes
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=uri),
            [types.TextDocumentContentChangePartial(types.Range(types.Position(1, 0), types.Position(1, 0)),
                                                    "\n我们明天见。\n")]))
        assert len((await published.get()).diagnostics) == 1
        ignore = next(a for a in actions if a.title.startswith("Ignore"))
        # (pygls' client reads a code action that carries a command as a Command, with the command's JSON as a
        # string in its command field: the server sends a CodeAction, as editors read it)
        assert "'command': 'electra-csc.ignoreWord', 'arguments': ['以经']" in str(ignore.command)
        name, arguments = "electra-csc.ignoreWord", ["以经"]
        await client.workspace_execute_command_async(types.ExecuteCommandParams(name, arguments))
        assert (tmp_path / ".electra-csc-words.txt").read_text(encoding="utf-8") == "以经\n"
        assert not (await published.get()).diagnostics

    asyncio.run(session(tmp_path, [encoding], steps))


def test_only_the_blocks_that_changed_are_corrected_again():
    fake = FakePass()
    state = _State()

    async def go() -> list[list]:
        state._pass = asyncio.get_running_loop().create_future()
        state._pass.set_result(fake)
        await state.corrected(["第一段以经。", "第二段。"], "k", {})
        return await state.corrected(["第一段以经。", "第二段改了，在见。"], "k", {})

    edits = asyncio.run(go())
    assert fake.calls == [["第一段以经。", "第二段。"], ["第二段改了，在见。"]]
    assert [e[0][2] for e in edits] == ["已", "再"]


def test_the_editors_threshold_has_the_librarys_name_and_its_old_one_is_still_read():
    """Issue 73, 1: ``threshold`` in the client's options, as in the library; ``minConfidence`` still read."""
    state = _State()
    for options, expected in (({"threshold": 0.7}, 0.7), ({"minConfidence": 0.6}, 0.6),
                              ({"threshold": 0.7, "minConfidence": 0.6}, 0.7), ({"threshold": True}, None), ({}, None)):
        state.configure(None, options)
        assert state.confidence("threshold", "minConfidence") == expected, options
