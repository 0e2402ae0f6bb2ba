"""A recipe's commands against their modules' own argument parsers (each module's or script's ``parser()``): every
key a flag the parser has, with its arity (``check_arguments``, before a build runs anything), and no key that only
restates the parser's default (``restated_defaults``: the modules' defaults are the shipped run's, so a recipe
states only where a stage differs)."""

from __future__ import annotations

import argparse
import functools
import importlib
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from training.recipe import PLACEHOLDER, ROOT, Command, Recipe, RecipeError, Stage, text


@functools.cache
def parser_of(kind: str, target: str) -> argparse.ArgumentParser:
    """The argument parser of a stage's module or script: its ``parser()``, read without running its ``main`` (a
    script runs under another name than ``__main__``, so only its definitions run)."""
    if kind == "module":
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as e:
            raise MissingPackage(target, e.name or str(e)) from None
        build = getattr(module, "parser", None)
    else:
        with script_context(target, []):
            build = runpy.run_path(str(ROOT / target), run_name="recipe_args").get("parser")
    if not callable(build):
        raise RecipeError(f"{target} has no parser(): not a command a recipe can check")
    parser = build()
    if not isinstance(parser, argparse.ArgumentParser):
        raise RecipeError(f"{target}: parser() returned {type(parser).__name__}, not an ArgumentParser")
    return parser


class MissingPackage(RecipeError):
    """A stage's module imports a package this environment lacks (the ``train`` extra not installed)."""

    def __init__(self, target: str, package: str) -> None:
        self.target, self.package = target, package
        super().__init__(f"{target} needs the package {package!r}, which is not installed here: install the training "
                         f"extra (pip install torch==2.13.0, then pip install -e '.[train]')")


class script_context:
    """``sys.argv`` and ``sys.path`` as ``python SCRIPT ARGS`` has them (the script's folder first)."""

    def __init__(self, script: str, args: list[str]) -> None:
        self.script, self.args = str(ROOT / script), args

    def __enter__(self) -> None:
        self.saved = sys.argv, list(sys.path)
        sys.argv = [self.script, *self.args]
        sys.path.insert(0, str(Path(self.script).parent))

    def __exit__(self, *exc: object) -> None:
        sys.argv, sys.path[:] = self.saved


def check_arguments(stage: Stage, argv_of: Callable[[Command], list[str]] | None) -> None:
    """Every module/script argument of ``stage`` is a flag its parser has, with the arity it takes; with ``argv_of``
    (the command's arguments filled in) the parser also parses them, as the command will. RecipeError names the
    stage and key."""
    for i, command in enumerate(stage.commands):
        if command.kind not in ("module", "script"):
            continue
        label = command_line(command)
        try:
            parser = parser_of(command.kind, command.target)
        except MissingPackage:
            raise
        except RecipeError as e:
            raise RecipeError(f"stage {stage.name!r} {command.where}{command.kind}: {e}") from None
        options = parser._option_string_actions
        extra = {stage.init_flag: True} if stage.init_flag and i == 0 else {}
        for key, value in {**command.args, **extra}.items():
            where = f"stage {stage.name!r} {command.where}args.{key}" if key not in extra else \
                f"stage {stage.name!r} init_flag"
            flag = key if key.startswith("-") else f"--{key}"
            action = options.get(flag)
            if action is None:
                raise RecipeError(f"{where}: {label} has no {flag}")
            takes = action.nargs != 0
            many = action.nargs in ("+", "*", argparse.REMAINDER) or (isinstance(action.nargs, int) and action.nargs > 1)
            if isinstance(value, bool) and takes and action.nargs not in ("?", "*") and key not in extra:
                raise RecipeError(f"{where}: {flag} takes a value, not true/false")
            if not isinstance(value, bool) and not takes:
                raise RecipeError(f"{where}: {flag} is a switch: write true (or false to leave it out)")
            if isinstance(value, list) and not many:
                raise RecipeError(f"{where}: {flag} takes one value, not a list")
        if argv_of is not None:
            prefix = f"stage {stage.name!r}" + (f" {command.where.rstrip('.')}" if command.where else "")

            def fail(message: str, _prefix: str = prefix, _label: str = label) -> Any:
                raise RecipeError(f"{_prefix}: {_label}: {message}")
            parser.error = fail  # type: ignore[method-assign]
            try:
                parser.parse_args(argv_of(command)[1:])
            finally:
                del parser.error


def restated_defaults(recipe: Recipe) -> list[str]:
    """Every module/script argument of ``recipe`` written with a literal value equal to its parser's default (a
    [vars] or stage placeholder is left to the recipe), one line each: ``stage 'finetune' args.keep: "last" is the
    default of python -m training.networks.finetune --keep``."""
    found = []
    for stage in recipe.stages:
        for i, command in enumerate(stage.commands):
            if command.kind not in ("module", "script"):
                continue
            written = stage.settings["run"][i].get("args", {}) if "run" in stage.settings else \
                stage.settings.get("args", {})
            actions = parser_of(command.kind, command.target)._option_string_actions
            for key, value in command.args.items():
                action = actions.get(f"--{key}")
                if action is None or PLACEHOLDER.search(str(written.get(key, ""))):
                    continue
                if _parsed(action, key, value) == action.default:
                    found.append(f"stage {stage.name!r} {command.where}args.{key}: {value!r} is the default of "
                                 f"{command_line(command)} --{key}")
    return found


def command_line(command: Command) -> str:
    """How a module/script command is run, for messages: ``python -m training.X.Y`` or ``python benchmarks/X.py``."""
    return f"python -m {command.target}" if command.kind == "module" else f"python {command.target}"


def _parsed(action: argparse.Action, key: str, value: Any) -> Any:
    """``value`` of the flag ``--key`` as the parser stores it: false as left out (its default); true as the switch
    stores it (``--no-KEY`` of a --KEY/--no-KEY pair: False); others through the action's type."""
    if isinstance(value, bool):
        if not value:
            return action.default
        if isinstance(action, argparse.BooleanOptionalAction):
            return not key.startswith("no-")
        return True if action.const is None else action.const
    convert = action.type if callable(action.type) else str
    if isinstance(value, list) or action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return [convert(text(v)) for v in (value if isinstance(value, list) else [value])]
    return convert(text(value))
