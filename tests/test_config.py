"""Every decoding setting is declared once (corrector/config.py); validation and the settings table derive from it."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from corrector.config import (
    KINDS,
    OPTIONAL,
    SETTINGS,
    CorrectorConfig,
    bounds,
    doc,
    request_settings,
    settings_table,
)


def test_every_setting_has_a_type_a_default_and_a_doc():
    assert set(SETTINGS) == set(CorrectorConfig().to_dict())
    for name in SETTINGS:
        assert KINDS[name] in (float, int, bool, tuple) and doc(name)
        if KINDS[name] in (float, int):  # numbers carry both bounds
            lo, hi = bounds(name)
            assert lo is not None and hi is not None and lo < hi
    assert {"threshold"} == OPTIONAL
    assert "batch_size" not in request_settings() and "threshold" in request_settings()


@pytest.mark.parametrize(("name", "value", "message"), [
    ("threshold", 1.5, "threshold must be within [0, 1], got 1.5"),
    ("shortlist", 0, "shortlist must be within [1, 1000], got 0"),
    ("top_k", 1001, "top_k must be within [0, 1000], got 1001"),
    ("top_k", 2.5, "top_k must be an integer, got 2.5"),
    ("max_edits", True, "max_edits must be an integer, got True"),
    ("use_lm", 1, "use_lm must be true or false, got 1"),
    ("protect_foreign_names", "0.1", "protect_foreign_names must be a number, got '0.1'"),
    ("bogus", 1, "unknown corrector setting(s): bogus"),
])
def test_a_bad_value_is_refused_with_the_setting_named(name, value, message):
    with pytest.raises(ValueError) as e:
        CorrectorConfig().with_overrides(**{name: value})
    assert str(e.value) == message


def test_one_integer_rule_and_numbers_from_integers():
    cfg = CorrectorConfig().with_overrides(top_k=5.0, max_edits=2, threshold=1)
    assert (cfg.top_k, cfg.max_edits, cfg.threshold) == (5, 2, 1.0)
    assert type(cfg.top_k) is int and type(cfg.threshold) is float
    assert CorrectorConfig().with_overrides(threshold=None).threshold is None  # None leaves a setting as it is


def test_settings_table_lists_every_setting_with_the_value_in_force():
    table = settings_table({"protect_foreign_names": 0.005, "threshold": 0.58})
    lines = table.splitlines()
    assert len(lines) == 2 + len(SETTINGS)
    assert "| `protect_foreign_names` | number in [0, 1] | 0.005 |" in table
    assert "| `max_edits` | integer in [0, 1000000] | 0 |" in table
    assert "| `threshold` | number in [0, 1] | 0.58 |" in table
    assert "| `use_lm` | boolean | true |" in table and "| `protect` | list | [] |" in table


def test_cli_lists_the_settings_with_the_shipped_bundles_values(capsys):
    from corrector.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["settings"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "| `protect_foreign_names` | number in [0, 1] | 0.005 |" in out  # the manifest's tuned default
    shipped = json.loads((ROOT / "data" / "electra_models" / "default" / "ranker.json").read_text(encoding="utf-8"))
    both = f"{shipped['threshold']:g} ({shipped['threshold_no_lm']:g} with use_lm false)"
    assert f"| `threshold` | number in [0, 1] | {both} |" in out  # the ranker's, with the LM and without


def test_cli_settings_of_a_missing_bundle_is_one_line_and_exit_1(capsys, tmp_path):
    from corrector.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["settings", "--model", str(tmp_path / "none")])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: no model bundle at {tmp_path / 'none'}") and err.count("\n") == 1
