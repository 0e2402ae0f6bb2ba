"""The HTTP service's settings: CSC_ environment variables, the command line's flags over them (and passed on to
worker processes), and bad corrector settings stopping the start in one line."""

from __future__ import annotations

import pytest

from service.settings import ServiceSettings


def test_settings_come_from_csc_environment_variables(monkeypatch, tmp_path):
    import service.settings as module

    assert not [v for v in vars(module).values() if isinstance(v, ServiceSettings)]  # nothing built at import
    monkeypatch.setenv("CSC_MODEL_DIR", str(tmp_path))
    monkeypatch.setenv("CSC_MAX_BATCH_SIZE", "7")
    monkeypatch.setenv("CSC_BATCHING", "false")
    monkeypatch.setenv("CSC_CORRECTOR_SETTINGS", '{"threshold": 0.7, "protect": ["张三"]}')
    s = ServiceSettings()
    assert (s.model_dir, s.max_batch_size, s.batching) == (tmp_path, 7, False)
    assert s.corrector_settings == {"threshold": 0.7, "protect": ["张三"]}
    with pytest.raises(ValueError):
        ServiceSettings(max_wait_ms=-1)


@pytest.mark.parametrize(("value", "words"), [
    ('{"batch_size": 2.5}', ["batch_size", "integer"]),
    ('{"use_lm": "no"}', ["use_lm", "boolean"]),
    ('{"verify": false}', ["verify", "not permitted"]),
    ('{"bogus": 1}', ["bogus", "not permitted"]),
    ('{"threshold": 1.5}', ["threshold", "1"]),
    ('["use_lm"]', ["JSON object"]),
    ("{use_lm: false}", ["not valid JSON"]),
])
def test_bad_corrector_settings_stop_the_start_in_one_line(value, words, tiny_bundle, capsys):
    from service.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--model", str(tiny_bundle), "--corrector-settings", value, "--port", "0"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: invalid settings: --corrector-settings"), err
    for w in words:
        assert w in err


def test_flags_win_over_environment_and_reach_worker_processes(monkeypatch, tmp_path):
    from service.cli import build_parser, export_to_env, settings_from_args

    monkeypatch.setenv("CSC_PORT", "9000")
    monkeypatch.setenv("CSC_MAX_WAIT_MS", "9")
    args = build_parser().parse_args(["--port", "8123", "--model", str(tmp_path), "--no-batching", "--workers", "2",
                                      "--corrector-settings", '{"use_lm": false}', "--request-timeout", "3"])
    s = settings_from_args(args)
    assert (s.port, s.max_wait_ms, s.model_dir, s.batching, s.workers) == (8123, 9.0, tmp_path, False, 2)
    assert s.corrector_settings == {"use_lm": False} and s.request_timeout_s == 3.0
    for name in ServiceSettings.model_fields:  # start clean; monkeypatch removes whatever export_to_env sets
        monkeypatch.setenv(f"CSC_{name.upper()}", "")
        monkeypatch.delenv(f"CSC_{name.upper()}")
    export_to_env(s)  # what `--workers 2` does before uvicorn spawns the workers
    assert ServiceSettings() == s


def test_every_setting_has_its_flag_from_its_declaration_and_a_row_in_the_docs():
    """The flags are built from ServiceSettings' declarations (help, default, group, name), so a new setting gets
    its flag and its environment variable at once; docs/service.md's table names exactly those flags."""
    import re
    from pathlib import Path

    from service.cli import build_parser, flags

    declared = {f.field: f for f in flags()}
    assert set(ServiceSettings.model_fields) - set(declared) == {"api_keys", "measured_chars_per_s"}  # variables only
    parser = build_parser()
    for field, flag in declared.items():
        action = next(a for a in parser._actions if a.dest == field)
        assert action.option_strings[0] == flag.names[0]
        default = ServiceSettings.model_fields[field].get_default(call_default_factory=True)
        if not isinstance(default, bool):  # a switch's help says what its --no- flag does
            assert "(default " in action.help, field
    assert declared["model_dir"].names == ("--model", "-m") and declared["batching"].names == ("--no-batching",)
    assert declared["request_timeout_s"].names == ("--request-timeout",)
    doc = (Path(__file__).parent.parent / "docs" / "service.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(--[a-z0-9-]+)`", doc, flags=re.M))
    assert rows == {f.names[0] for f in declared.values()}
