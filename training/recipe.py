"""A recipe: a build's stages as typed tables, read and checked before anything runs (``python -m training.build``).

A recipe (``training/recipes/NAME.toml``) has ``name``, ``bundle`` (optional: the stage whose ``bundle/`` is the result),
``init`` (optional: the pair pretraining starts from), ``[vars]`` (values several stages share) and ``[[stage]]``
tables. A stage runs one command, written in its own table::

    [vars]
    holdout = 1000

    [[stage]]
    name = "candidates"
    module = "training.evidence.candidates"   # python -m training.evidence.candidates (its main, in this process)
    [stage.args]                               # --KEY VALUE, in the order written
    similarity = "{similarity}"                # the folder of the stage called similarity
    pool-size = 6000                           # numbers as numbers
    holdout = "{holdout}"                      # a [vars] value, with its type
    blend-on-dev = true                        # a switch: true writes --blend-on-dev, false leaves it out
    real = ["{data}/a.tsv", "{data}/b.tsv"]    # several values: --real A B (a list [vars] value is spliced in)

or several, as ``[[stage.run]]`` tables with the same keys. A command is one of
``module = "training.X.Y"`` or ``script = "benchmarks/X.py"`` (a file of the repository) with ``args`` and
optionally ``stdout`` (a file its printed output goes to); ``write_json = PATH`` with ``value`` (a table);
``merge_json = PATH`` with ``files`` (a table KEY = FILE: one JSON object of those files' contents).
In strings, ``{data}`` is the data folder, ``{init}`` the pair pretraining starts from, ``{NAME}`` a [vars] value
or the folder of the earlier stage NAME. Stage keys besides the command's: ``bundle_from = "STAGE"`` (the stage
starts from a fresh copy of that stage's ``bundle/``), ``init_flag = "--init-from"`` (when there is a pair to
start from, the first command gets this flag and the pair), ``skip_with_init = true`` (not run when
``--init-from`` is given), ``optional = true`` (run only when named: ``--with NAME``) and ``cost`` (what the stage
took on the shipped run: ``cpu_minutes``, ``gpu_minutes``, ``disk_mb``, ``memory_gb``; ``--plan`` shows it).

Every key is checked when the recipe is read, and each command's arguments against the module's own argument
parser (``training.recipe_args``); each problem is one line naming the stage and the key. A recipe states only
where a stage differs from its module's defaults, which are the shipped run's.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECIPES = Path(__file__).resolve().parent / "recipes"
NAME = re.compile(r"[a-z][a-z0-9_]*")
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
ARG_KEY = re.compile(r"[a-z0-9][a-z0-9-]*")
RESERVED = ("data", "init", "state", "bundle")  # placeholders, and OUT's own folders
TOP_KEYS = {"name", "bundle", "init", "vars", "stage"}
KINDS = {"module": {"args", "stdout"}, "script": {"args", "stdout"}, "write_json": {"value"}, "merge_json": {"files"}}
BODY = {"module": "args", "script": "args", "write_json": "value", "merge_json": "files"}  # each kind's table
COMMAND_KEYS = set(KINDS) | {"args", "stdout", "value", "files"}
STAGE_KEYS = COMMAND_KEYS | {"name", "run", "bundle_from", "init_flag", "skip_with_init", "optional", "cost"}
COST_KEYS = {  # what a stage costs, as measured on the shipped run (``--plan`` prints it)
    "cpu_minutes": "wall minutes on 2 CPU cores",
    "gpu_minutes": "wall minutes on one H100",
    "disk_mb": "the stage's folder, in MB",
    "memory_gb": "peak memory, in GB",
}
Scalar = (str, int, float)


class RecipeError(ValueError):
    """A recipe that cannot run, with a one-line reason."""


@dataclass(frozen=True)
class Command:
    kind: str  # "module", "script", "write_json" or "merge_json"
    target: str  # the module, the script (relative to the repository), or the file a helper writes
    args: dict[str, Any]  # module, script: --KEY VALUE; write_json: the value; merge_json: KEY = FILE
    stdout: str | None = None
    where: str = ""  # "run[2]." in messages, "" for a stage's only command

    def argv(self) -> list[str]:
        """The command as the old list of strings: ``[module, "--key", "value", ...]``, ``["write_json", PATH, JSON]``,
        ``["merge_json", PATH, "KEY=FILE", ...]``."""
        if self.kind == "write_json":
            return ["write_json", self.target, json.dumps(self.args, ensure_ascii=False)]
        if self.kind == "merge_json":
            return ["merge_json", self.target, *(f"{k}={v}" for k, v in self.args.items())]
        return [self.target, *flags(self.args)]

    def strings(self) -> list[tuple[str, str]]:
        """(key, string) for every string the command holds: where placeholders are."""
        body = BODY[self.kind]
        found = [(self.kind, self.target)] + ([("stdout", self.stdout)] if self.stdout else [])
        return found + [(f"{body}.{k}", s) for k, v in self.args.items() for s in strings_in(v)]


@dataclass(frozen=True)
class Stage:
    name: str
    commands: list[Command]
    settings: dict[str, Any]  # the stage's table as written in the recipe
    bundle_from: str | None = None
    init_flag: str | None = None
    skip_with_init: bool = False
    optional: bool = False
    needs: list[str] = field(default_factory=list)  # stages whose folders it reads
    reads_init: bool = False  # a command holds {init}
    cost: dict[str, float] = field(default_factory=dict)  # COST_KEYS: what it took on the shipped run

    def template(self) -> dict[str, Any]:
        """What the stage runs, its placeholders not filled in: hashed into the stage's record."""
        return {"argv": [c.argv() for c in self.commands], "stdout": [c.stdout for c in self.commands],
                "bundle_from": self.bundle_from, "init_flag": self.init_flag, "skip_with_init": self.skip_with_init}


@dataclass
class Recipe:
    name: str
    path: Path
    sha256: str
    settings: dict[str, Any]  # the file as written (recorded in the bundle's manifest)
    stages: list[Stage]
    bundle: str | None  # the stage whose bundle/ is the result (copied to OUT/bundle), if any
    init: str | None
    given: dict[str, str] = field(default_factory=dict)  # --set STAGE=PATH: stages whose output is given
    sets: list[str] = field(default_factory=list)  # the --set items applied

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise RecipeError(f"recipe {self.name!r} has no stage {name!r} (its stages: {', '.join(self.names())})")

    def names(self) -> list[str]:
        return [s.name for s in self.stages]


def toml() -> Any:
    """The TOML reader: the standard library's from Python 3.11, the tomli package before."""
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise RecipeError("reading a recipe on Python 3.10 needs the tomli package (pip install tomli)") from e


def recipe_path(name_or_path: str) -> Path:
    """``default`` -> training/recipes/default.toml; a path ending in .toml as it is."""
    path = Path(name_or_path) if name_or_path.endswith(".toml") else RECIPES / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in RECIPES.glob("*.toml")))
        raise RecipeError(f"no recipe {name_or_path!r} ({path} does not exist; shipped recipes: {known})")
    return path


def flags(args: dict[str, Any]) -> list[str]:
    """``{"pool-size": 6000, "blend-on-dev": True, "real": ["a", "b"], "x": False}`` ->
    ``["--pool-size", "6000", "--blend-on-dev", "--real", "a", "b"]``."""
    out: list[str] = []
    for key, value in args.items():
        if value is False:
            continue
        out.append(f"--{key}")
        if value is not True:
            out.extend(text(v) for v in (value if isinstance(value, list) else [value]))
    return out


def text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    return []


def parse_value(raw: str) -> Any:
    """A --set value: a TOML value when it reads as one (5000, 0.05, false, ["a", "b"]), else the text."""
    try:
        return toml().loads(f"v = {raw}")["v"]
    except Exception:  # noqa: BLE001  (anything that is not a TOML value is text: a path, a mix)
        return raw


def load_recipe(name_or_path: str, sets: Iterable[str] = ()) -> Recipe:
    """Read a recipe, apply ``--set`` items and check every key; RecipeError (one line) on the first problem."""
    path = recipe_path(name_or_path)
    raw = path.read_bytes()
    reader = toml()
    try:
        settings = reader.loads(raw.decode("utf-8"))
    except (reader.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RecipeError(f"{path}: {e}") from e
    try:
        return build_recipe(path, raw, settings, list(sets))
    except RecipeError as e:
        raise RecipeError(f"{path.name}: {e}") from None


def build_recipe(path: Path, raw: bytes, settings: dict[str, Any], sets: list[str]) -> Recipe:
    unknown = set(settings) - TOP_KEYS
    if unknown:
        raise RecipeError(f"unknown top-level keys {sorted(unknown)} (known: {sorted(TOP_KEYS)})")
    tables = settings.get("stage", [])
    if not isinstance(tables, list) or not tables:
        raise RecipeError("no [[stage]] tables")
    names = [t.get("name") if isinstance(t, dict) else None for t in tables]
    for i, name in enumerate(names):
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in RESERVED:
            raise RecipeError(f"stage {i + 1} needs a name of lower-case letters, digits and _ "
                              f"(not {', '.join(RESERVED)}), got {name!r}")
        if name in names[:i]:
            raise RecipeError(f"two stages named {name!r}")
    variables = dict(settings.get("vars", {}))
    for key, value in variables.items():
        if not NAME.fullmatch(key) or key in RESERVED or key in names:
            raise RecipeError(f"vars.{key}: a [vars] name is lower-case letters, digits and _, and neither a stage "
                              f"nor one of {', '.join(RESERVED)}")
        check_value(value, f"vars.{key}")
    tables = json.loads(json.dumps(tables))  # a copy: --set changes it, settings stays as written
    given = apply_sets(sets, tables, variables, [str(n) for n in names])
    stages: list[Stage] = []
    for table in tables:
        stages.append(read_stage(table, variables, [s.name for s in stages], settings.get("init")))
    by_name = {s.name: s for s in stages}
    bundle = settings.get("bundle")
    if bundle is not None and (bundle not in by_name or by_name[bundle].optional):
        raise RecipeError(f"bundle = {bundle!r} is not a stage that always runs")
    init = settings.get("init")
    if init is not None and not isinstance(init, str):
        raise RecipeError(f"init must be a string, got {init!r}")
    return Recipe(str(settings.get("name", path.stem)), path, hashlib.sha256(raw).hexdigest(), settings, stages,
                  bundle, init, given, sets)


def check_value(value: Any, where: str) -> None:
    """A value an argument can take: text, a number, true/false, or a list of text and numbers."""
    if isinstance(value, (bool, *Scalar)):
        return
    if isinstance(value, list) and value and all(isinstance(v, Scalar) and not isinstance(v, bool) for v in value):
        return
    raise RecipeError(f"{where}: {value!r} is not text, a number, true/false or a non-empty list of text and numbers")


def apply_sets(sets: list[str], tables: list[dict[str, Any]], variables: dict[str, Any],
               names: list[str]) -> dict[str, str]:
    """``--set`` items: ``VAR=VALUE`` replaces a [vars] value, ``STAGE.KEY=VALUE`` an argument of the stage's
    commands that have it (else it is added to its first), ``STAGE=PATH`` gives the stage's output (it does not run).
    Returns the given outputs."""
    given: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise RecipeError(f"--set {item!r}: write NAME=VALUE")
        stage, dot, arg = key.partition(".")
        if dot and stage in names:
            table = tables[names.index(stage)]
            commands = [c for c in table.get("run", [table]) if "module" in c or "script" in c]
            having = [c for c in commands if arg in c.get("args", {})] or commands[:1]
            if not having or not ARG_KEY.fullmatch(arg):
                raise RecipeError(f"--set {item!r}: stage {stage!r} has no module command for --{arg}")
            for command in having:
                command.setdefault("args", {})[arg] = parse_value(value)
        elif key in variables:
            variables[key] = parse_value(value)
        elif key in names:
            given[key] = value
        else:
            raise RecipeError(f"--set {item!r}: {key!r} is neither a stage, a STAGE.KEY nor a [vars] name")
    return given


def read_stage(table: dict[str, Any], variables: dict[str, Any], earlier: list[str], init: str | None) -> Stage:
    name = table["name"]
    unknown = set(table) - STAGE_KEYS
    if unknown:
        raise RecipeError(f"stage {name!r} has unknown keys {sorted(unknown)} (known: {sorted(STAGE_KEYS)})")
    if "run" in table:
        if set(table) & COMMAND_KEYS:
            raise RecipeError(f"stage {name!r}: either one command in the stage's table or [[stage.run]] tables, "
                              f"not both ({sorted(set(table) & COMMAND_KEYS)})")
        if not isinstance(table["run"], list) or not table["run"] or not all(isinstance(c, dict) for c in table["run"]):
            raise RecipeError(f"stage {name!r}: run must be [[stage.run]] tables, one a command")
        commands = [read_command(c, variables, f"stage {name!r} run[{i}].", f"run[{i}].")
                    for i, c in enumerate(table["run"])]
    else:
        commands = [read_command({k: v for k, v in table.items() if k in COMMAND_KEYS}, variables, f"stage {name!r} ")]
    for key, kind in (("bundle_from", str), ("init_flag", str), ("skip_with_init", bool), ("optional", bool)):
        if key in table and not isinstance(table[key], kind):
            raise RecipeError(f"stage {name!r} {key}: expected {kind.__name__}, got {table[key]!r}")
    cost = table.get("cost", {})
    if not isinstance(cost, dict) or set(cost) - set(COST_KEYS) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in cost.values()):
        raise RecipeError(f"stage {name!r} cost: a table of non-negative numbers, keys among {sorted(COST_KEYS)}; "
                          f"got {cost!r}")
    refs: set[str] = set()
    for command in commands:
        for key, s in command.strings():
            for ref in PLACEHOLDER.findall(s):
                if ref not in (*earlier, name, "data", "init"):
                    raise RecipeError(f"stage {name!r} {command.where}{key}: reads {{{ref}}}, which is not an earlier "
                                      f"stage or a [vars] name")
                refs.add(ref)
    reads_init = "init" in refs
    bundle_from, init_flag = table.get("bundle_from"), table.get("init_flag")
    if bundle_from:
        if bundle_from not in earlier:
            raise RecipeError(f"stage {name!r} bundle_from: {bundle_from!r} is not an earlier stage")
        refs.add(bundle_from)
    if init_flag and init:
        refs |= set(PLACEHOLDER.findall(init)) - {"data"}
    return Stage(name, commands, table, bundle_from, init_flag, bool(table.get("skip_with_init", False)),
                 bool(table.get("optional", False)), needs=sorted(refs - {"data", "init", name}),
                 reads_init=reads_init, cost={k: float(v) for k, v in cost.items()})


def read_command(table: dict[str, Any], variables: dict[str, Any], where: str, label: str = "") -> Command:
    """One command of a stage; ``where`` prefixes its errors, ``label`` names it in a stage of several (``run[2].``)."""
    unknown = set(table) - COMMAND_KEYS
    if unknown:
        raise RecipeError(f"{where}has unknown keys {sorted(unknown)} (known: {sorted(COMMAND_KEYS)})")
    kinds = [k for k in KINDS if k in table]
    if len(kinds) != 1:
        raise RecipeError(f"{where}needs one of {', '.join(KINDS)} (a command), got {kinds or 'none'}")
    kind = kinds[0]
    extra = set(table) & (COMMAND_KEYS - set(KINDS)) - KINDS[kind]
    if extra:
        raise RecipeError(f"{where}{kind}: {sorted(extra)} do not go with {kind} (it takes {sorted(KINDS[kind])})")
    target = table[kind]
    if not isinstance(target, str):
        raise RecipeError(f"{where}{kind}: expected a string, got {target!r}")
    if kind == "module" and not (target.startswith("training.") and module_exists(target)):
        raise RecipeError(f"{where}module: {target!r} is not a training module (training.SUBPACKAGE.MODULE: "
                          f"docs/training.md, What is where)")
    if kind == "script" and not (target.endswith(".py") and (ROOT / target).is_file()):
        raise RecipeError(f"{where}script: {target!r} is not a .py file of the repository")
    body_key = BODY[kind]
    body = table.get(body_key, {})
    if not isinstance(body, dict) or (kind != "module" and kind != "script" and not body):
        raise RecipeError(f"{where}{body_key}: expected a table of KEY = VALUE")
    if kind in ("module", "script"):
        args = {}
        for key, value in body.items():
            if not ARG_KEY.fullmatch(key):
                raise RecipeError(f"{where}args.{key}: an argument's key is its flag without -- (pool-size)")
            args[key] = resolve(value, variables, f"{where}args.{key}")
            check_value(args[key], f"{where}args.{key}")
        body = args
    elif kind == "merge_json" and not all(isinstance(v, str) for v in body.values()):
        raise RecipeError(f"{where}files: every value is a file's path")
    else:
        body = resolve(body, variables, f"{where}{body_key}")
    stdout = table.get("stdout")
    if stdout is not None and not isinstance(stdout, str):
        raise RecipeError(f"{where}stdout: expected a path, got {stdout!r}")
    return Command(kind, text(resolve(target, variables, f"{where}{kind}")), body,
                   text(resolve(stdout, variables, f"{where}stdout")) if stdout else None, label)


def resolve(value: Any, variables: dict[str, Any], where: str) -> Any:
    """[vars] values put in: ``"{holdout}"`` alone becomes the value with its type (a list's items spliced into a
    list), inside longer text its text."""
    if isinstance(value, list):
        out: list[Any] = []
        for v in value:
            r = resolve(v, variables, where)
            out.extend(r if isinstance(r, list) and not isinstance(v, list) else [r])
        return out
    if isinstance(value, dict):
        return {k: resolve(v, variables, f"{where}.{k}") for k, v in value.items()}
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER.fullmatch(value)
    if whole and whole.group(1) in variables:
        return variables[whole.group(1)]

    def one(m: re.Match[str]) -> str:
        v = variables.get(m.group(1))
        if v is None:
            return m.group(0)
        if isinstance(v, (list, bool)):
            raise RecipeError(f"{where}: [vars] {m.group(1)} is {'a list' if isinstance(v, list) else 'true/false'}, "
                              f"which goes in alone (\"{{{m.group(1)}}}\"), not inside text")
        return text(v)
    return PLACEHOLDER.sub(one, value)


def module_exists(name: str) -> bool:
    """Whether ``name`` (``training.data.prepare``) is a module, found without running it."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False
