"""The language server in a real editor: headless Neovim (Debian's ``neovim``) starts ``python -m corrector lsp`` as
its LSP client does, opens a Markdown file with a slip, waits for the diagnostic, asks for the code actions, applies
the preferred quick fix through its own workspace-edit code, and writes the file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import system_dependency

ROOT = Path(__file__).resolve().parents[1]

INIT = """
local out = {{}}
local id = vim.lsp.start_client({{
  name = "electra-csc",
  cmd = {{ {python}, "-m", "corrector", "lsp" }},
  root_dir = {root},
  init_options = {{ debounceMs = 0 }},
}})
vim.cmd("edit " .. {file})
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, id)
if not vim.wait(90000, function() return #vim.diagnostic.get(buf) > 0 end, 100) then
  vim.fn.writefile({{ "no diagnostic" }}, {result})
  vim.cmd("cquit 3")
end
local d = vim.diagnostic.get(buf)[1]
local params = {{
  textDocument = {{ uri = vim.uri_from_bufnr(buf) }},
  range = {{ start = {{ line = d.lnum, character = 0 }}, ["end"] = {{ line = d.lnum, character = 1000 }} }},
  context = {{ diagnostics = {{}} }},
}}
local titles = {{}}
local applied = false
for _, res in pairs(vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 30000) or {{}}) do
  for _, action in ipairs(res.result or {{}}) do
    table.insert(titles, action.title)
    if action.isPreferred and action.edit and not applied then
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
      applied = true
    end
  end
end
vim.cmd("write")
vim.fn.writefile({{ vim.fn.json_encode({{ message = d.message, lnum = d.lnum, col = d.col, source = d.source,
                                         titles = titles, applied = applied }}) }}, {result})
vim.lsp.stop_client(id)
vim.cmd("qall!")
"""


def lua(s: str) -> str:
    return json.dumps(s)  # a JSON string is a Lua string literal for these (no control characters)


def test_neovim_shows_the_diagnostic_and_applies_the_quick_fix(tmp_path):
    nvim = shutil.which("nvim")
    system_dependency(nvim is not None, "Neovim is not installed (apt-get install neovim)")
    page = tmp_path / "page.md"
    page.write_text("# 标题\n\n他以经知道自己错了。\n", encoding="utf-8")
    result = tmp_path / "result.json"
    init = tmp_path / "init.lua"
    init.write_text(INIT.format(python=lua(sys.executable), root=lua(str(tmp_path)), file=lua(str(page)),
                                result=lua(str(result))), encoding="utf-8")
    done = subprocess.run([nvim, "--headless", "--clean", "-u", str(init)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.is_file(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    seen = json.loads(result.read_text(encoding="utf-8"))
    assert seen["source"] == "electra-csc" and seen["message"].startswith("以经→已经") and seen["lnum"] == 2
    assert seen["applied"] and "Replace 以 with 已" in seen["titles"]
    assert page.read_text(encoding="utf-8") == "# 标题\n\n他已经知道自己错了。\n"
