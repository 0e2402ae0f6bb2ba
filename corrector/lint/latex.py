"""Prose in LaTeX, found by pylatexenc's parser (the 'documents' extra): text, and the arguments of the commands
that hold text (``\\section``, ``\\caption``, ``\\footnote``, ``\\emph``, ...; a command it does not know too).

Never checked: commands and their other arguments (``\\label``, ``\\ref``, ``\\cite`` keys, ``\\url``, a ``\\href``'s
address, file names, lengths), math (``$...$``, ``\\[...\\]``, ``equation``, ``align``, ...), comments, and what
``verbatim``, ``lstlisting``, ``minted`` and the like hold. Inline math and references stay in their sentence as
context. A blank line, ``\\par``, a heading, an ``\\item``, a caption, a footnote and an environment's edges end a
block; a single line break inside a paragraph is dropped (Chinese text wraps without spaces).
"""

from __future__ import annotations

import re
from typing import Any

from .document import Block, Piece, block_of
from .prose import without_urls

CONTEXT_COMMANDS = {  # every argument is context
    "label", "ref", "eqref", "pageref", "autoref", "cref", "Cref", "nameref", "vref", "cite", "citep", "citet",
    "citealp", "citeauthor", "citeyear", "parencite", "textcite", "autocite", "footcite", "nocite", "url", "path",
    "nolinkurl", "includegraphics", "input", "include", "includeonly", "usepackage", "RequirePackage",
    "documentclass", "bibliography", "bibliographystyle", "addbibresource", "newcommand", "renewcommand",
    "providecommand", "newenvironment", "renewenvironment", "def", "let", "setlength", "addtolength", "setcounter",
    "addtocounter", "vspace", "hspace", "color", "pagecolor", "pagestyle", "thispagestyle", "pagenumbering",
    "texttt", "verb", "lstinline", "mintinline", "code", "hypersetup", "geometry", "graphicspath", "newtheorem",
    "DeclareMathOperator", "SI", "si", "num", "ce", "tikz", "begin", "end", "fontsize", "linespread", "setmainfont",
    "setCJKmainfont", "setCJKsansfont", "setCJKmonofont", "setsansfont", "setmonofont", "ctexset", "bibitem",
}
LEADING_CONTEXT = {"href": 1, "hyperref": 0, "textcolor": 1, "colorbox": 1, "fcolorbox": 2, "foreignlanguage": 1}
BLOCK_COMMANDS = {"part", "chapter", "section", "subsection", "subsubsection", "paragraph", "subparagraph",
                  "caption", "footnote", "footnotetext", "title", "subtitle", "author", "date", "item", "par",
                  "maketitle", "newline", "newpage", "clearpage", "marginpar", "thanks", "abstract"}
SKIPPED_ENVIRONMENTS = {
    "verbatim", "verbatim*", "Verbatim", "BVerbatim", "lstlisting", "minted", "comment", "alltt", "filecontents",
    "equation", "equation*", "align", "align*", "alignat", "alignat*", "gather", "gather*", "multline", "multline*",
    "eqnarray", "eqnarray*", "flalign", "flalign*", "math", "displaymath", "tikzpicture", "pgfpicture", "forest",
    "thebibliography", "CJK*",
}
_LINE_BREAKS = re.compile(r"\n[ \t]*\n\s*|\n[ \t]*")


class _Prose:
    def __init__(self, text: str):
        self.text = text
        self.blocks: list[Block] = []
        self.pieces: list[Piece] = []

    def flush(self) -> None:
        if (b := block_of(self.pieces)) is not None:
            self.blocks.append(b)
        self.pieces = []

    def context(self, node: Any) -> None:
        if node is not None and node.len:
            self.pieces.append(Piece(self.text[node.pos:node.pos + node.len], None, prose=False))

    def chars(self, node: Any) -> None:
        """Text: a blank line ends the block; a single line break is dropped."""
        at, text = node.pos, node.chars
        last = 0
        for m in _LINE_BREAKS.finditer(text):
            self.pieces += without_urls(text[last:m.start()], at + last)
            if m.group().count("\n") > 1:
                self.flush()
            last = m.end()
        self.pieces += without_urls(text[last:], at + last)

    def walk(self, nodes: Any) -> None:
        from pylatexenc.latexwalker import (
            LatexCharsNode,
            LatexCommentNode,
            LatexEnvironmentNode,
            LatexGroupNode,
            LatexMacroNode,
            LatexMathNode,
        )

        skip_groups = 0  # groups after a command that pylatexenc did not give arguments, still its arguments
        own_block = False  # ... and the group after a heading, caption or footnote that it did not parse
        for node in nodes or []:
            if node is None:
                continue
            if isinstance(node, LatexGroupNode) and skip_groups:
                skip_groups -= 1
                self.context(node)
                continue
            if isinstance(node, LatexGroupNode) and own_block:
                self.walk(node.nodelist)
                self.flush()
                own_block = False
                continue
            skip_groups, own_block = 0, False
            if isinstance(node, LatexCharsNode):
                self.chars(node)
            elif isinstance(node, LatexCommentNode):
                continue
            elif isinstance(node, LatexMathNode):
                self.context(node)
            elif isinstance(node, LatexGroupNode):
                self.walk(node.nodelist)
            elif isinstance(node, LatexEnvironmentNode):
                self.flush()
                if node.environmentname not in SKIPPED_ENVIRONMENTS:
                    self.walk(node.nodelist)
                    self.flush()
            elif isinstance(node, LatexMacroNode):
                skip_groups = self.command(node)
                own_block = node.macroname in BLOCK_COMMANDS and not skip_groups
            else:  # specials (~, --, ``, &): context
                self.context(node)

    def command(self, node: Any) -> int:
        """Walks a command's arguments; returns how many of the groups after it are still its context arguments."""
        name = node.macroname
        args = [a for a in (node.nodeargd.argnlist if node.nodeargd is not None else []) if a is not None]
        if name in BLOCK_COMMANDS:
            self.flush()
        if name in CONTEXT_COMMANDS:
            self.context(node)
            return 0 if args else 1
        leading = LEADING_CONTEXT.get(name, 0)
        if not args:  # (the command's name is not shown: \textbf{以经} reads 以经 in its sentence)
            return leading
        for i, arg in enumerate(args):
            if i < leading or getattr(arg, "delimiters", ("{", "}"))[0] == "[":
                self.context(arg)
            else:
                self.walk(getattr(arg, "nodelist", [arg]))
        if name in BLOCK_COMMANDS:
            self.flush()
        return 0


def latex_blocks(text: str) -> list[Block]:
    """The prose of LaTeX ``text``."""
    from pylatexenc.latexwalker import LatexWalker  # the 'documents' extra

    prose = _Prose(text)
    nodes, _, _ = LatexWalker(text, tolerant_parsing=True).get_latex_nodes()
    prose.walk(nodes)
    prose.flush()
    return prose.blocks
