"""The options the plain command and ``batch`` share: the model and decoding flags, and turning them into
``Corrector.load`` settings (``python -m corrector`` and ``python -m corrector batch``)."""

from __future__ import annotations

import argparse
import functools
import json
import re
from pathlib import Path
from typing import Any

from corrector.bundle import DEVICES, PRECISIONS
from corrector.config import KINDS, SETTINGS, WORD_LISTS, check, doc, kind_text, parse_confusions, shown
from corrector.model_path import ENV_MODEL

LOAD_ARGS = ("path", "device", "precision", "threads", "lm")  # Corrector.load's own arguments, not settings for --set
OFF_ALIASES = {"use_lm": ("--no-lm",)}  # the spellings the command had before its flags were generated
LISTS = {  # how the command takes the list settings
    "protect": {"metavar": "WORD", "how": "repeatable, or several at once with commas: --protect 张三,李四"},
    "terms": {"metavar": "WORD", "how": "repeatable, or several at once with commas: --terms 结点,移项"},
    "bigrams": {"metavar": "AB", "how": "repeatable, or several at once with commas: --bigrams 向左,满秩"},
    "confusions": {"metavar": "FILE", "how": "here a file of them, one 'A→B' per line"},
}


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit code 1."""


def decoding_args(ap: argparse.ArgumentParser, without: tuple[str, ...] = ()) -> None:
    """The model options and a flag for every decoding setting but those ``without`` (:func:`setting_args`), shared
    by the plain command and ``batch``."""
    model_args(ap)
    ap.add_argument("--lm", help="another character LM: a training.evidence.char_lm directory, or a KenLM .arpa/.klm file "
                                 "(needs the kenlm module)")
    ap.add_argument("--device", choices=DEVICES, default="auto")
    ap.add_argument("--precision", choices=PRECISIONS, default="auto",
                    help="CPU graphs: auto (the bundle's recommendation), fp32 or int8-quantised")
    setting_args(ap, without)


def setting_args(ap: argparse.ArgumentParser, without: tuple[str, ...] = ()) -> None:
    """One flag for each CorrectorConfig field (but ``without``), generated from its declaration: ``--top-k N`` for
    ``top_k``, its type, its doc as help with the type, bounds and default, its bounds checked as it is read (one line
    on stderr, exit code 2); a boolean's ``--name`` / ``--no-name``; then ``--set`` and ``--protect-file``."""
    group = ap.add_argument_group(
        "decoding settings", "each setting of corrector/config.py; the default shown is the shipped bundle's value in\n"
                             "force ('python -m corrector settings --model DIR' lists another bundle's)")
    for name in SETTINGS:
        if name in without:
            continue
        flag = "--" + name.replace("_", "-")
        what = doc(name).replace("%", "%%")
        if name in LISTS:
            group.add_argument(flag, action=_Words if name in WORD_LISTS else "store", metavar=LISTS[name]["metavar"],
                               help=f"{what}; {LISTS[name]['how']}")
        elif KINDS[name] is bool:
            off = ("--no-" + flag[2:], *OFF_ALIASES.get(name, ()))
            action = group.add_argument(flag, *off, action=_Switch, off=off, dest=name,
                                        help=f"{what} [default: %(in_force)s]")
            action.in_force = InForce(name)  # type: ignore[attr-defined]
        else:
            action = group.add_argument(flag, type=KINDS[name], action=_Checked, metavar="N" if KINDS[name] is int
                                        else "X", help=f"{what} [{kind_text(name)}; default: %(in_force)s]")
            action.in_force = InForce(name)  # type: ignore[attr-defined]
    group.add_argument("--protect-file", metavar="FILE", help="file of protected words, one per line")
    group.add_argument("--set", action="append", default=[], type=_setting, metavar="NAME=VALUE", dest="settings",
                       help="any decoding setting by its name, VALUE parsed as JSON when it can be, "
                            "e.g. --set use_lm=false --set top_k=10; repeatable, applied after the flags above")


class InForce:
    """A setting's value in force for the shipped bundle (its tuned defaults over the declarations), as ``--help``
    shows it: read from the bundle's manifest and ranker only when the help is printed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        value = shipped_values().get(self.name, SETTINGS[self.name].default)
        return ("on" if value else "off") if KINDS[self.name] is bool else shown(value)


def in_force_for(path: str | Path) -> tuple[dict[str, Any], Any]:
    """The settings in force for the bundle at ``path`` (its manifest's tuned defaults, its ranker's shortlist), as
    ``Corrector.load`` resolves them without loading the networks, and its ranker (``RankerWeights``)."""
    from corrector.bundle import Bundle
    from corrector.config import in_force
    from corrector.rank import RankerWeights

    bundle = Bundle.load(path)
    ranker = RankerWeights.of_bundle(bundle)
    return in_force(bundle.corrector_defaults, ranker.meta.get("shortlist")).to_dict(), ranker


@functools.cache
def shipped_values() -> dict[str, Any]:
    """The settings in force for the default bundle (what ``python -m corrector settings`` lists); the declarations
    when it cannot be read."""
    from corrector.model_path import default_model_path

    try:
        return in_force_for(default_model_path())[0]
    except Exception:  # noqa: BLE001  (help text only: fall back to the declarations)
        return {}


class _Checked(argparse.Action):
    """A number setting's flag: its value checked against the declaration (exit code 2, one line)."""

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            setattr(namespace, self.dest, check(self.dest, values))
        except ValueError as e:
            parser.exit(2, f"error: {option_string}: {e}\n")


class _Switch(argparse.Action):
    """A boolean setting's flags: true, or false for the ``off`` spellings."""

    def __init__(self, option_strings: list[str], dest: str, off: tuple[str, ...] = (), **kw: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kw)
        self.off = off

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, option_string not in self.off)


class _Words(argparse.Action):
    """``--protect``: words, given one at a time or several with commas."""

    def __call__(self, parser, namespace, values, option_string=None):
        words = [w.strip() for w in re.split("[,，]", str(values)) if w.strip()]
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), *words])


def _setting(arg: str) -> tuple[str, object]:
    name, sep, raw = arg.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {arg!r}")
    if name in LOAD_ARGS:
        raise argparse.ArgumentTypeError(f"{name} is not a decoding setting; use --model, --device or --precision")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return name, value


def model_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--model", "-m", help=f"model bundle directory (default: ${ENV_MODEL} or the shipped one)")


def decoding_settings(args: argparse.Namespace) -> dict:
    """``Corrector.load`` settings from the flags :func:`setting_args` added: those given, ``--protect-file``'s words
    added to ``--protect``'s, ``--confusions``' file read, then ``--set``."""
    from corrector.guards import read_word_file

    settings = {name: getattr(args, name) for name in SETTINGS if getattr(args, name, None) is not None}
    protect = [*settings.pop("protect", []), *(read_word_file(args.protect_file) if args.protect_file else [])]
    if protect:
        settings["protect"] = protect
    if "confusions" in settings:
        try:
            settings["confusions"] = parse_confusions(read_text(settings["confusions"]))
        except ValueError as e:
            raise CliError(f"{args.confusions}: {e}") from None
    settings.update(args.settings)
    return settings


def read_text(path: str, newline: str | None = None) -> str:
    try:
        with open(path, encoding="utf-8", newline=newline) as f:
            return f.read()
    except FileNotFoundError:
        raise CliError(f"file not found: {path}") from None
    except UnicodeDecodeError as e:
        raise CliError(f"{path} is not valid UTF-8 (byte {e.start})") from None
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None
