"""The command's decoding flags are generated from the settings' declarations (corrector/config.py): one flag per
setting with its doc, type, bounds and default; a value out of bounds stops the command in one line, exit code 2.
And ``in_force``, the one place the settings in force are worked out, load time and per call."""

from __future__ import annotations

import argparse

import pytest

from corrector.batch.command import batch_parser
from corrector.cli.main import correct_parser
from corrector.cli.options import decoding_settings, shipped_values
from corrector.config import KINDS, SETTINGS, CorrectorConfig, bounds, doc, in_force, kind_text, shown


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def actions(ap: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in ap._actions}


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_every_setting_has_a_flag_with_its_doc_bounds_and_default():
    plain = actions(correct_parser())
    for name in SETTINGS:
        action = plain[name]
        assert flag(name) in action.option_strings and action.default is None  # not given: the bundle's value
        assert action.help is not None and doc(name) in action.help.replace("%%", "%")
        if KINDS[name] in (int, float):  # the value in force for the shipped bundle, read when help is printed
            assert f"[{kind_text(name)}; default: %(in_force)s]" in action.help
            value = shipped_values().get(name, SETTINGS[name].default)
            assert str(action.in_force) == shown(value)
        elif KINDS[name] is bool:
            assert "--no-" + flag(name)[2:] in action.option_strings
    assert set(SETTINGS) - set(actions(batch_parser())) == {"batch_size"}  # there --batch-size is lines per call


def test_help_shows_every_setting_with_its_doc():
    text = one_line(correct_parser().format_help())
    for name in SETTINGS:
        assert flag(name) in text and one_line(doc(name)) in text


@pytest.mark.parametrize("args, want", [
    (["--top-k", "3", "--threshold", "0.7", "--max-edits", "2"], {"top_k": 3, "threshold": 0.7, "max_edits": 2}),
    (["--no-lm"], {"use_lm": False}),  # the spelling from before the flags were generated
    (["--no-use-lm", "--use-lm"], {"use_lm": True}),  # the last one given wins
    (["--no-veto-unreliable-pairs", "--protect-dictionary-words"],
     {"veto_unreliable_pairs": False, "protect_dictionary_words": True}),
    (["--protect", "张三,李四", "--protect", "王五"], {"protect": ["张三", "李四", "王五"]}),
    (["--rtd-floor", "0", "--set", "rtd_floor=0.5"], {"rtd_floor": 0.5}),  # --set after the flags
    ([], {}),
])
def test_flags_become_load_settings(args, want):
    assert decoding_settings(correct_parser().parse_args(["今天", *args])) == want


def test_the_bounds_of_each_number_flag_are_its_declarations():
    ap = correct_parser()
    for name in SETTINGS:
        if KINDS[name] in (int, float):
            lo, hi = bounds(name)
            got = decoding_settings(ap.parse_args([flag(name), str(KINDS[name](lo)), flag(name), str(KINDS[name](hi))]))
            assert got == {name: hi}


@pytest.mark.parametrize("args, message", [
    (["--top-k", "1001"], "error: --top-k: top_k must be within [0, 1000], got 1001"),
    (["--threshold", "-0.5"], "error: --threshold: threshold must be within [0, 1], got -0.5"),
    (["--threshold", "nan"], "error: --threshold: threshold must be within [0, 1], got nan"),
    (["--shortlist", "0"], "error: --shortlist: shortlist must be within [1, 1000], got 0"),
])
def test_a_value_out_of_bounds_is_one_line_and_exit_2(capsys, args, message):
    for parser in (correct_parser(), batch_parser()):
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(["--input", "x", "--output", "y", *args] if parser.prog.endswith("batch") else args)
        assert stop.value.code == 2
        assert capsys.readouterr().err == message + "\n"


def test_in_force_layers_bundle_ranker_load_and_call():
    bundle = {"rtd_floor": 0.001, "margin": 0.3}  # margin: a retired setting an older manifest still carries
    loaded = in_force(bundle, 16, load={"protect": ["张三"], "top_k": 5})
    assert (loaded.rtd_floor, loaded.shortlist, loaded.top_k, loaded.protect) == (0.001, 16, 5, ("张三",))
    assert in_force({"shortlist": 4}, 16).shortlist == 4  # the bundle's own shortlist wins over its ranker's
    call = in_force(call={"protect": "李四", "top_k": None, "max_edits": 1}, loaded=loaded)
    assert (call.protect, call.top_k, call.max_edits) == (("张三", "李四"), 5, 1)  # a call's words add
    assert in_force(call={}, loaded=loaded) is loaded and in_force() == CorrectorConfig()
    with pytest.raises(TypeError):
        in_force(bundle, loaded=loaded)
    with pytest.raises(ValueError, match="top_k must be within"):
        in_force(call={"top_k": -1}, loaded=loaded)


def test_help_shows_the_shipped_bundles_values_as_settings_lists_them(capsys):
    """Before: --help showed the declarations (shortlist 8, rtd_floor 0) where `settings` showed the shipped bundle's
    values in force (16, 0.003) (issue 72, 10)."""
    import re

    from corrector.cli.main import main, run_settings

    with pytest.raises(SystemExit):
        main(["--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    values = shipped_values()
    assert values["shortlist"] == 16 and values["rtd_floor"] == 0.003  # the shipped bundle's, not the declarations'
    assert "(LM, words) [integer in [1, 1000]; default: 16]" in text
    assert "every character [number in [0, 1]; default: 0.003]" in text
    assert run_settings([]) == 0
    assert "| `shortlist` | integer in [1, 1000] | 16 |" in capsys.readouterr().out
