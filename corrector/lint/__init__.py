"""``python -m corrector lint``: the corrector where people write, on files and repositories.

Each file is read as a ``Document`` (its text exactly as stored: encoding, BOM and line endings kept), its prose
found by a real parser of its kind (``extract.py``: Markdown, HTML, source code, data files, plain text), cut into
``Block``s (a paragraph, a heading, a comment: one text for the corrector, made of ``Piece``s that each know where
they lie in the file), and every block of every file corrected in one ``Corrector`` pass (``check.py``). Edits in
pieces that are not prose (inline code, math, URLs, escapes) are dropped, so a slip in code is never reported.
Findings come out with 1-based lines and columns in code points (``report.py``), and fixes are written back only
where the file still holds what was read (``fix.py``).
"""
