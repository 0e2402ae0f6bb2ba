"""``Explanation`` printed for people: ``str(fix.explain(text))`` and ``python -m corrector --explain``, and the
columns described in ``--help``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from corrector import Candidate, CharExplanation, Correction, Edit, Explanation
from corrector.types import EXPLAIN_COLUMNS

REPO = Path(__file__).resolve().parents[1]


def known() -> Explanation:
    kept = CharExplanation(0, "我", True, 0.0012, [Candidate("找", 0.0003, 0.0001, 0.0, 0.6,
                                                             {"keep": 0.0, "gen_lp": -9.2, "shape": 0.6})],
                           "kept: best candidate 找 at 0.000 is not above the threshold 0.58", 0.9991)
    applied = CharExplanation(1, "门", True, 0.9987, [Candidate("们", 0.9971, 0.997, 0.85, 0.0,
                                                                {"pinyin": 0.85, "lm_gain": 16.048, "shape": 0.0}),
                                                      Candidate("能", 0.0012, 0.0004, 0.6, 0.0, {})],
                              "applied: 们", 0.0011)
    protected = CharExplanation(2, "吃", False, 0.0, [], "protected (protect: a word the caller protects)")
    nothing = CharExplanation(3, "龘", True, 0.5, [], "no candidates", 1.0)
    punct = CharExplanation(4, "。", False, 0.0, [], "not editable")
    return Explanation(Correction("我门吃龘。", "我们吃龘。", [Edit(1, "门", "们", 0.9971, "pinyin")]),
                       [kept, applied, protected, nothing, punct])


def test_str_is_one_row_per_character_with_the_best_candidates_features():
    assert str(known()).split("\n") == [
        "source: 我门吃龘。",
        "target: 我们吃龘。",
        "  edit: 1 门→们 (confidence 0.997, pinyin)",
        "  POS CHAR rtd=P(typo) keep=P(as written)  candidate(P(meant),p=generator's P)  [decision]",
        "    0 我 rtd=0.001 keep=1.00  找(0.00,p=0.000)  [kept: best candidate 找 at 0.000 is not above the threshold 0.58]",
        "        找: gen_lp=-9.2 shape=0.6",
        "    1 门 rtd=0.999 keep=0.00  们(1.00,p=0.997) 能(0.00,p=0.000)  [applied: 们]",
        "        们: pinyin=0.85 lm_gain=16.048",
        "    2 吃 [protected (protect: a word the caller protects)]",
        "    3 龘 rtd=0.500 keep=1.00    [no candidates]",
        "  (1 character the model does not read: punctuation, Latin letters, digits, characters outside its vocabulary)",
    ]


def test_str_of_a_text_with_nothing_to_read():
    ex = Explanation(Correction("ok", "ok", []), [CharExplanation(0, "o", False, 0.0, [], "not editable"),
                                                    CharExplanation(1, "k", False, 0.0, [], "not editable")])
    assert str(ex) == ("source: ok\ntarget: ok\n"
                       "  (2 characters the model does not read: punctuation, Latin letters, digits, characters "
                       "outside its vocabulary)")
    assert str(Explanation(Correction("", "", []), [])) == "source: \ntarget: "


def test_str_of_the_library_matches_its_explanation(forced):
    text = "今天天汽很好hello"
    ex = forced.explain(text, protect=["很好"])
    lines = str(ex).split("\n")
    assert lines[:2] == [f"source: {text}", f"target: {ex.correction.target}"]
    for c in ex.chars:
        if c.editable:
            assert c.row() in lines
            if c.candidates:
                assert lines[lines.index(c.row()) + 1].startswith(f"        {c.candidates[0].char}: ")
        elif c.char in "很好":
            assert f"{c.position:>5} {c.char} [{c.decision}]" in lines
    assert lines[-1].startswith("  (5 characters the model does not read")  # h e l l o


def cli(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corrector", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)


def test_cli_explain_rows_are_the_libraries(model, forced):
    text = "今天天汽很好"
    done = cli(text, "--explain", *model)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    ex = forced.explain(text)
    assert all(c.editable for c in ex.chars)
    assert done.stdout == "\n".join([ex.correction.target, *(c.row() for c in ex.chars)]) + "\n"


def test_help_describes_every_explain_column():
    done = cli("--help")
    assert done.returncode == 0
    assert EXPLAIN_COLUMNS in done.stdout
    for column in ("POS", "CHAR", "rtd=R", "keep=K", "C(S,p=G)", "DECISION"):
        assert f"\n  {column} " in "\n" + EXPLAIN_COLUMNS
    assert "--json" in done.stdout.split("--explain prints")[1]
