"""The options the plain command and ``batch`` share: the model and decoding flags, and turning them into
``Corrector.load`` settings (``python -m corrector`` and ``python -m corrector batch``)."""

from __future__ import annotations

import argparse
import json
import re

from corrector.bundle import PRECISIONS
from corrector.model_path import ENV_MODEL

LOAD_ARGS = ("path", "device", "precision", "threads", "lm")  # Corrector.load's own arguments, not settings for --set


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit code 1."""


def decoding_args(ap: argparse.ArgumentParser) -> None:
    """The model and decoding options, shared by the plain command and ``batch``."""
    model_args(ap)
    ap.add_argument("--threshold", type=float, help="detection threshold in [0, 1] (default: the bundle's)")
    ap.add_argument("--max-edits", type=int, help="most edits per sentence (0 = no limit)")
    ap.add_argument("--protect", action="append", default=[], metavar="WORD",
                    help="a word never edited inside; repeatable, or several at once with commas: --protect 张三,李四")
    ap.add_argument("--protect-file", help="file of protected words, one per line")
    ap.add_argument("--confusions", help="file of custom confusion pairs, one 'A→B' per line")
    ap.add_argument("--no-lm", action="store_true", help="decide without the character LM (the networks' own ranker)")
    ap.add_argument("--lm", help="another character LM: a training.evidence.char_lm directory, or a KenLM .arpa/.klm file "
                                 "(needs the kenlm module)")
    ap.add_argument("--set", action="append", default=[], type=_setting, metavar="NAME=VALUE", dest="settings",
                    help="any decoding setting ('python -m corrector settings' lists them with the values in force), "
                         "VALUE parsed as JSON when it can be, "
                         "e.g. --set use_lm=false --set top_k=10; repeatable, applied after the flags above")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    ap.add_argument("--precision", choices=PRECISIONS, default="auto",
                    help="CPU graphs: auto (the bundle's recommendation), fp32 or int8-quantised")


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
    """``Corrector.load`` settings from the options added by :func:`decoding_args` (and ``--batch-size``)."""
    from corrector.config import parse_confusions
    from corrector.guards import read_word_file

    settings: dict = {}
    protect = [w.strip() for arg in args.protect for w in re.split("[,，]", arg) if w.strip()]
    if args.protect_file:
        protect += read_word_file(args.protect_file)
    if protect:
        settings["protect"] = protect
    if args.confusions:
        try:
            settings["confusions"] = parse_confusions(read_text(args.confusions))
        except ValueError as e:
            raise CliError(f"{args.confusions}: {e}") from None
    if args.no_lm:
        settings["use_lm"] = False
    for key in ("threshold", "max_edits", "batch_size"):
        if getattr(args, key, None) is not None:
            settings[key] = getattr(args, key)
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
