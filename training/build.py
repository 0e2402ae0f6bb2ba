"""Build a bundle from a recipe: every stage of the training pipeline, in order, from the data folder alone.

    python -m training.build --recipe default --data ../shared/data --out runs/build
    python -m training.build --recipe my.toml --data DATA --out DIR --init-from PAIR   (pretraining starts there)
    python -m training.build --recipe default --data ../shared/data --out runs/build --plan   (what would run)

A recipe (``training/recipes/NAME.toml``) lists stages. Each stage has a ``name`` and ``run``, a list of commands,
each the argument list of a ``python -m training.SUBPACKAGE.MODULE`` command (``training.data.prepare``; called in
this process through the module's ``main``), or one of two helpers: ``["write_json", PATH, JSON]`` and
``["merge_json", PATH, "KEY=FILE", ...]``.
In the commands, ``{data}`` is ``--data``, ``{init}`` the pair pretraining starts from, and ``{NAME}`` the folder
``OUT/NAME`` of the stage called NAME, where that stage writes. Optional stage keys:

- ``bundle_from = "STAGE"``: the stage starts from a fresh copy of ``OUT/STAGE/bundle`` in ``OUT/NAME/bundle``
  (the stages that add evidence to a bundle each keep their own copy, so that any of them can run again).
- ``init_flag = "--init-from"``: when the recipe's ``init`` or ``--init-from`` names a pair, the stage's first
  command gets this flag and the pair; ``skip_with_init = true``: the stage does not run when ``--init-from`` is given.

A stage is skipped when ``OUT/state/NAME.json`` records the same key: a hash of the stage's settings, of the size
and modification time of every file it reads from ``{data}`` or ``{init}``, and of the records of the stages it
reads from. So a changed setting runs that stage again and every stage that reads its output, directly or not; an
interrupted stage runs again (the training commands resume from their checkpoints). The recipe's ``bundle`` stage's
bundle is copied to ``OUT/bundle``, and its manifest's provenance records the recipe: name, sha256 and settings.
``--record BUNDLE`` runs nothing and records the recipe in BUNDLE's manifest, for a bundle whose stages were run one
by one (the shipped one: the recipe's header says where they differ from it).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.data.location import default_data, require

RECIPES = Path(__file__).resolve().parent / "recipes"
PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")
HELPERS = ("write_json", "merge_json")
RESERVED = ("data", "init", "state", "bundle")  # placeholders, and OUT's own folders
STAGE_KEYS = {"name", "run", "bundle_from", "init_flag", "skip_with_init"}


class RecipeError(ValueError):
    """A recipe that cannot run, with a one-line reason."""


@dataclass
class Stage:
    name: str
    run: list[list[str]]
    settings: dict[str, Any]  # the stage's table as written in the recipe (hashed)
    bundle_from: str | None = None
    init_flag: str | None = None
    skip_with_init: bool = False
    needs: list[str] = field(default_factory=list)  # stages whose folders it reads


@dataclass
class Recipe:
    name: str
    path: Path
    sha256: str
    settings: dict[str, Any]
    stages: list[Stage]
    bundle: str
    init: str | None


def toml() -> Any:
    """The TOML reader: the standard library's from Python 3.11, the tomli package before."""
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        raise RecipeError("reading a recipe on Python 3.10 needs the tomli package (pip install tomli)") from e


def module_exists(name: str) -> bool:
    """Whether ``name`` (``training.data.prepare``) is a module, found without running it."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def recipe_path(name_or_path: str) -> Path:
    """``default`` -> training/recipes/default.toml; a path ending in .toml as it is."""
    path = Path(name_or_path) if name_or_path.endswith(".toml") else RECIPES / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in RECIPES.glob("*.toml")))
        raise RecipeError(f"no recipe {name_or_path!r} ({path} does not exist; shipped recipes: {known})")
    return path


def load_recipe(name_or_path: str) -> Recipe:
    path = recipe_path(name_or_path)
    raw = path.read_bytes()
    reader = toml()
    try:
        settings = reader.loads(raw.decode("utf-8"))
    except (reader.TOMLDecodeError, UnicodeDecodeError) as e:
        raise RecipeError(f"{path}: {e}") from e
    stages: list[Stage] = []
    for i, table in enumerate(settings.get("stage", [])):
        name = table.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name in RESERVED:
            raise RecipeError(f"{path}: stage {i + 1} needs a name of lower-case letters, digits and _ "
                              f"(not {', '.join(RESERVED)}), got {name!r}")
        if name in {s.name for s in stages}:
            raise RecipeError(f"{path}: two stages named {name!r}")
        unknown = set(table) - STAGE_KEYS
        if unknown:
            raise RecipeError(f"{path}: stage {name!r} has unknown keys {sorted(unknown)} (known: {sorted(STAGE_KEYS)})")
        run = table.get("run")
        if not run or not all(isinstance(c, list) and c and all(isinstance(a, str) for a in c) for c in run):
            raise RecipeError(f"{path}: stage {name!r}: run must be a list of commands, each a list of strings")
        for cmd in run:
            if not (cmd[0].startswith("training.") or cmd[0] in HELPERS):
                raise RecipeError(f"{path}: stage {name!r}: {cmd[0]!r} is neither a training module nor one of "
                                  f"{', '.join(HELPERS)}")
            if cmd[0] not in HELPERS and not module_exists(cmd[0]):
                raise RecipeError(f"{path}: stage {name!r}: no module {cmd[0]!r} (the commands are "
                                  f"training.SUBPACKAGE.MODULE: docs/training.md, What is where)")
        stage = Stage(name, run, table, table.get("bundle_from"), table.get("init_flag"),
                      bool(table.get("skip_with_init", False)))
        known = {s.name for s in stages}
        refs = {m for cmd in run for a in cmd for m in PLACEHOLDER.findall(a)} - {"data", "init", name}
        if stage.bundle_from:
            refs.add(stage.bundle_from)
        if stage.init_flag and settings.get("init"):
            refs |= set(PLACEHOLDER.findall(settings["init"])) - {"data"}
        for ref in sorted(refs):
            if ref not in known:
                raise RecipeError(f"{path}: stage {name!r} reads {{{ref}}}, which is not an earlier stage")
        stage.needs = sorted(refs)
        stages.append(stage)
    if not stages:
        raise RecipeError(f"{path}: no [[stage]] tables")
    bundle = settings.get("bundle", stages[-1].name)
    if bundle not in {s.name for s in stages}:
        raise RecipeError(f"{path}: bundle = {bundle!r} is not a stage")
    return Recipe(str(settings.get("name", path.stem)), path, hashlib.sha256(raw).hexdigest(), settings, stages,
                  bundle, settings.get("init"))


def fingerprint(path: Path) -> list[Any]:
    """Size and modification time of a file, or of every file under a folder (relative paths, sorted)."""
    if path.is_file():
        st = path.stat()
        return [path.name, st.st_size, st.st_mtime_ns]
    if path.is_dir():
        return [[str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns]
                for p in sorted(path.rglob("*")) if p.is_file()]
    return [str(path), "missing"]


class Builder:
    def __init__(self, recipe: Recipe, data: Path, out: Path, init_from: Path | None = None) -> None:
        self.recipe, self.data, self.out, self.init_from = recipe, data, out, init_from
        self.state_dir = out / "state"

    def folder(self, stage: str) -> Path:
        return self.out / stage

    def init(self) -> str | None:
        if self.init_from is not None:
            return str(self.init_from)
        return self.substitute(self.recipe.init, "init") if self.recipe.init else None

    def substitute(self, arg: str, stage: str) -> str:
        def one(m: re.Match[str]) -> str:
            key = m.group(1)
            if key == "data":
                return str(self.data)
            if key == "init":
                init = self.init()
                if init is None:
                    raise RecipeError(f"stage {stage!r} reads {{init}}, but neither the recipe nor --init-from names one")
                return init
            return str(self.folder(key))
        return PLACEHOLDER.sub(one, arg)

    def commands(self, stage: Stage) -> list[list[str]]:
        cmds = [[self.substitute(a, stage.name) for a in cmd] for cmd in stage.run]
        init = self.init()
        if stage.init_flag and init:
            cmds[0] = [*cmds[0], stage.init_flag, init]
        return cmds

    def read_paths(self, stage: Stage) -> list[Path]:
        """The files a stage reads from outside OUT: its ``{data}`` arguments and the pair it starts from."""
        paths = [Path(self.substitute(a, stage.name)) for cmd in stage.run for a in cmd if "{data}" in a]
        init = self.init()
        if stage.init_flag and init and self.init_from is not None:
            paths.append(Path(init))
        return paths

    def record(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.state_dir / f"{name}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def key(self, stage: Stage) -> str:
        needed = {n: (self.record(n) or {}).get("finished") for n in stage.needs}
        blob = {"settings": stage.settings, "init": self.init() if stage.init_flag else None,
                "inputs": [fingerprint(p) for p in self.read_paths(stage)], "needs": needed}
        return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()

    def skipped(self, stage: Stage) -> bool:
        return stage.skip_with_init and self.init_from is not None

    def up_to_date(self, stage: Stage) -> bool:
        rec = self.record(stage.name)
        return rec is not None and rec.get("key") == self.key(stage) and self.folder(stage.name).is_dir()

    def run_stage(self, stage: Stage) -> None:
        here = self.folder(stage.name)
        here.mkdir(parents=True, exist_ok=True)
        (self.state_dir / f"{stage.name}.json").unlink(missing_ok=True)  # not done until it finishes again
        if stage.bundle_from:
            shutil.rmtree(here / "bundle", ignore_errors=True)
            shutil.copytree(self.folder(stage.bundle_from) / "bundle", here / "bundle")
        t0 = time.time()
        for cmd in self.commands(stage):
            print(f"== {stage.name}: {' '.join(cmd)}", flush=True)  # noqa: T201
            call(cmd, stage.name)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        now = time.time_ns()  # stages that read this one run again after it runs again
        record = {"stage": stage.name, "key": self.key(stage), "seconds": round(time.time() - t0, 1),
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // 10**9)) + f".{now % 10**9:09d}Z"}
        (self.state_dir / f"{stage.name}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    def plan(self) -> list[tuple[str, str]]:
        """(stage, what happens to it) for every stage: it runs when it is not up to date or reads a stage that runs."""
        out: list[tuple[str, str]] = []
        runs: set[str] = set()
        for stage in self.recipe.stages:
            if self.skipped(stage):
                out.append((stage.name, "skipped (--init-from)"))
            elif self.up_to_date(stage) and not runs & set(stage.needs):
                out.append((stage.name, "up to date"))
            else:
                runs.add(stage.name)
                out.append((stage.name, "runs"))
        return out

    def build(self) -> Path:
        self.out.mkdir(parents=True, exist_ok=True)
        for stage in self.recipe.stages:
            if self.skipped(stage):
                print(f"== {stage.name}: skipped (--init-from)", flush=True)  # noqa: T201
            elif self.up_to_date(stage):
                print(f"== {stage.name}: up to date", flush=True)  # noqa: T201
            else:
                self.run_stage(stage)
        return self.publish()

    def publish(self) -> Path:
        """Copy the bundle stage's bundle to OUT/bundle and record the recipe in its manifest."""
        src, dest = self.folder(self.recipe.bundle) / "bundle", self.out / "bundle"
        if not (src / "manifest.json").is_file():
            raise RecipeError(f"stage {self.recipe.bundle!r} left no bundle in {src}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
        record(dest, self.recipe, {"init_from": self.init_from.name} if self.init_from else {})
        print(f"== bundle: {dest} (recipe {self.recipe.name}, sha256 {self.recipe.sha256[:12]})", flush=True)  # noqa: T201
        return dest


def record(bundle: Path, recipe: Recipe, extra: dict[str, Any]) -> None:
    """Write the recipe (name, sha256, settings and ``extra``) into ``bundle``'s manifest, as provenance.recipe."""
    path = bundle / "manifest.json"
    if not path.is_file():
        raise RecipeError(f"{bundle} has no manifest.json (a bundle folder)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest.setdefault("provenance", {})["recipe"] = {
        "name": recipe.name, "sha256": recipe.sha256, "settings": recipe.settings, **extra}
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def call(cmd: list[str], stage: str) -> None:
    """One command of a stage, in this process; RecipeError when it fails."""
    if cmd[0] == "write_json":
        path = Path(cmd[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(json.loads(cmd[2]), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return
    if cmd[0] == "merge_json":
        merged = {}
        for item in cmd[2:]:
            key, _, file = item.partition("=")
            merged[key] = json.loads(Path(file).read_text(encoding="utf-8"))
        Path(cmd[1]).write_text(json.dumps(merged, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return
    main = importlib.import_module(cmd[0]).main
    try:
        code = main(cmd[1:])
    except SystemExit as e:
        code = e.code
    except Exception as e:  # a module's own error: one line naming the stage (the module's log says more)
        raise RecipeError(f"stage {stage!r}: python -m {cmd[0]} failed: {type(e).__name__}: {e}") from e
    if code not in (None, 0):
        detail = f": {code}" if isinstance(code, str) else f" (exit {code})"
        raise RecipeError(f"stage {stage!r}: python -m {cmd[0]} failed{detail}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default="default", help="a recipe's name (training/recipes/NAME.toml) or a .toml path")
    ap.add_argument("--data", type=Path, default=default_data(),
                    help="the data folder (default $CSC_DATA or ../shared/data; docs/data.md)")
    ap.add_argument("--out", type=Path, required=False, help="folder of the stages' outputs, their records and bundle/")
    ap.add_argument("--init-from", type=Path, default=None,
                    help="a pretrained pair (a pretraining run or snapshot folder) to start pretraining from")
    ap.add_argument("--plan", action="store_true", help="print what would run, run nothing")
    ap.add_argument("--record", type=Path, default=None, metavar="BUNDLE",
                    help="run nothing: record the recipe in BUNDLE's manifest (a bundle whose stages were run one "
                    "by one, as the recipe's header says)")
    args = ap.parse_args(argv)
    if args.record is not None:
        try:
            record(args.record, load_recipe(args.recipe),
                   {"recorded": "with --record: the stages were run one by one; the recipe's header lists where "
                    "they differ from it"})
        except RecipeError as e:
            sys.stderr.write(f"error: {e}\n")
            return 1
        return 0
    try:
        recipe = load_recipe(args.recipe)
        if args.out is None:
            raise RecipeError("--out DIR is needed (the stages' outputs go there)")
        require([args.data], args.data)
        if args.init_from is not None and not (args.init_from / "discriminator").is_dir():
            raise RecipeError(f"--init-from {args.init_from}: no discriminator/ there (a pretrained pair's folder)")
        if args.init_from is not None and not any(s.init_flag for s in recipe.stages):
            raise RecipeError(f"recipe {recipe.name!r} has no stage that starts from a pair (init_flag)")
        builder = Builder(recipe, args.data, args.out, args.init_from)
        if args.plan:
            for name, what in builder.plan():
                print(f"{name:16} {what}")  # noqa: T201
            return 0
        builder.build()
    except RecipeError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
