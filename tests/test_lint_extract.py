"""What the linter reads as prose in each kind of file, and where: hand-written files with slips planted in prose and
in everything that is not prose (code, math, URLs, attributes, front matter), read by the real parsers."""

from __future__ import annotations

import pytest

from corrector.lint.document import Document
from corrector.lint.extract import blocks_of, kind_of

MARKDOWN = """\
---
title: 前言以经
---

# 标题以经

正文里他以经走了，见 `代码以经` 和 $以经$ 与 $$以经$$。链接 [文字](https://例子.com/以经) 和 https://example.com/以经 。
第二行也以经
到了。

```python
# 注释以经
```

    缩进代码以经

<div title="属性以经">块里以经</div>

!!! note "提示以经"
    警告框里以经写好。

    ```cpp
    // 框里的代码以经
    ```

=== "标签"
    标签里以经写好。

| 表头 | 列 |
| --- | --- |
| 单元以经 | `以经` |

![图片以经](a以经.png)
"""

PROSE_LINES = {5, 7, 8, 17, 19, 20, 27, 31, 33}  # the lines whose 以经 is prose (1-based)


def found(text: str, name: str) -> dict[int, list[int]]:
    """Line -> columns (1-based) of the prose 以 of 以经 in ``text`` read as ``name``."""
    doc = Document(name, text)
    out: dict[int, list[int]] = {}
    for block in blocks_of(doc, kind_of(name) or "text"):
        at = block.text.find("以经")
        while at >= 0:
            offset = block.locate(at)
            if offset is not None:
                assert doc.text[offset] == "以"
                line, col = doc.line_col(offset)
                out.setdefault(line, []).append(col)
            at = block.text.find("以经", at + 1)
    return out


def test_markdown_prose_is_read_and_nothing_else():
    lines = MARKDOWN.splitlines()
    got = found(MARKDOWN, "page.md")
    assert set(got) == PROSE_LINES, {n: lines[n - 1] for n in set(got) ^ PROSE_LINES}
    for n, cols in got.items():  # the column of each prose 以经 on its line
        assert [lines[n - 1][c - 1:c + 1] for c in cols] == ["以经"] * len(cols)
    assert len(got[7]) == 1  # the paragraph's one prose slip, not the code, math or URLs beside it


def test_markdown_reads_code_and_math_as_context():
    doc = Document("a.md", "使用 `vector` 存储长度为 $n$ 的数组。\n")
    [block] = blocks_of(doc, "markdown")
    assert block.text == "使用 vector 存储长度为 n 的数组。"
    assert block.locate(block.text.index("vector")) is None and block.locate(0) == 0


def test_mkdocs_metadata_lines_are_not_prose():
    text = "author: 作者以经, 他人\ntitle: 以经\n\n正文以经。\n"
    assert set(found(text, "a.md")) == {4}


HTML = """<html><head><title>标题以经</title><style>.a { content: "以经" }</style></head>
<body><p>段落以经<code>代码以经</code>完&amp;以经</p>
<img alt="图片以经" src="x以经.png" title="提示以经"><pre>预排以经</pre>
<script>var s = "脚本以经";</script><!-- 注释以经 --></body></html>
"""


def test_html_text_alt_and_title_are_read_not_code_scripts_or_comments():
    got = found(HTML, "page.html")
    assert got == {1: [22], 2: [12, 37], 3: [13, 40]}, got  # the title, the paragraph (its entity is context), alt, title


def test_source_code_comments_and_strings():
    code = '#!/usr/bin/env python\n# 注释以经\nx = "字符串以经\\n以经"  # 行尾以经\nname_以经 = 1\n'
    assert found(code, "a.py") == {2: [5], 3: [9, 13, 22]}  # both sides of the escape; not the identifier
    c = "#include <以经.h>\n// 第一行以经\n// 第二行以经\nint x; /* 块以经 */\n"
    assert found(c, "a.c") == {2: [7], 3: [7], 4: [12]}
    [joined, _] = blocks_of(Document("a.c", c), "code")
    assert "第一行以经" in joined.text and "第二行以经" in joined.text  # line comments in a row: one block


def test_data_files_read_values_not_keys():
    assert found('{"键以经": "值以经", "n": 1}', "a.json") == {1: [11]}
    assert found("键以经: 值以经\nlist:\n  - \"项以经\"\n", "a.yaml") == {1: [7], 3: [7]}
    assert found('[t]\n键以经 = "值以经"\n', "a.toml") == {2: [9]}


def test_gettext_reads_msgstr_only():
    assert found('msgid "原文以经"\nmsgstr "译文以经"\n', "a.po") == {2: [11]}


def test_plain_text_paragraphs_join_their_lines():
    doc = Document("a.txt", "第一行\r\n以经第二行\r\n\r\n新段落以经\n")
    blocks = blocks_of(doc, "text")
    assert [b.text for b in blocks] == ["第一行以经第二行", "新段落以经"]
    assert doc.line_col(blocks[0].locate(3)) == (2, 1)


def test_columns_count_code_points_outside_the_basic_plane():
    doc = Document("a.md", "𠮷😀他以经走了\n")
    [block] = blocks_of(doc, "markdown")
    assert doc.line_col(block.locate(block.text.index("以"))) == (1, 4)


@pytest.mark.parametrize("name,kind", [("a.md", "markdown"), ("b.HTML", "html"), ("c.txt", "text"), ("d.json", "data"),
                                       ("e.po", "gettext"), ("f.rs", "code"), ("g.unknownext", None), ("Makefile", None)])
def test_kinds_by_name(name, kind):
    assert kind_of(name) == kind


def test_tree_sitter_reads_code_where_its_grammar_is_installed():
    """With tree-sitter and a grammar installed (the dev extra installs Python's and JavaScript's), code is read by the
    grammar: the same prose as Pygments finds, interpolations and escapes as context; without one, Pygments reads it."""
    from corrector.lint.code import code_blocks, lexer_for
    from corrector.lint.syntax_tree import parser_for

    assert parser_for("a.py") is not None and parser_for("a.js") is not None and parser_for("a.unknownext") is None
    code = '# 注释以经\n# 第二行\nx = "字符串以经\\n以经" + f"格式{y}以经"\ndef f():\n    """文档以经"""\n'
    by_tree = found(code, "a.py")
    assert by_tree == {1: [5], 3: [9, 13, 26], 5: [10]}
    pygments = {}
    for block in code_blocks(code, lexer_for("a.py")):
        for i in (i for i in range(len(block.text)) if block.text.startswith("以经", i)):
            if (at := block.locate(i)) is not None:
                line, col = Document("a.py", code).line_col(at)
                pygments.setdefault(line, []).append(col)
    assert pygments == by_tree
    [fstring] = [b for b in blocks_of(Document("a.py", code), "code") if "格式" in b.text]
    assert fstring.text == "格式{y}以经" and fstring.locate(2) is None  # the interpolation: context only
    js = '// 注释以经\nconst t = `模板${x}以经`; /* 块以经 */\n'
    assert found(js, "a.js") == {1: [6], 2: [18, 27]}
