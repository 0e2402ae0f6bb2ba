"""Build a bundle from a recipe: every stage of the training pipeline, in order, from the data folder alone.

    python -m training.build --recipe default --data ../shared/data --out runs/build
    python -m training.build --recipe default --out runs/build --init-from PAIR    (pretraining starts from PAIR)
    python -m training.build --recipe default --out runs/build --plan              (what would run, and why)
    python -m training.build --recipe default --out runs/build --dry-run           (the commands that would run)
    python -m training.build --recipe default --out runs/ft100 --reuse runs/build --from-stage export \\
        --set soup=runs/ft100                                   (a candidate bundle from one fine-tuned pair, measured)

A recipe (``training/recipes/NAME.toml``; its format: ``training/recipe.py``) lists stages, each a command (or a few)
with typed arguments; the whole recipe, and every command's arguments against that module's own parser, is checked
before anything runs. Stage NAME writes in ``OUT/NAME``; ``{NAME}`` in the recipe is that folder.

A stage is skipped when ``OUT/state/NAME.json`` records the same key: a hash of the stage's commands, of the size
and modification time of every file it reads from ``{data}``, ``{init}`` or a ``--set STAGE=PATH``, and of the
records of the stages it reads from. So a changed setting runs that stage again and every stage that reads its
output, directly or not; an interrupted stage runs again (the training commands resume from their checkpoints).

- ``--from-stage NAME`` runs NAME and every later stage, whatever their records say; the earlier stages are read
  where they are: ``OUT/STAGE``, or ``REUSE/STAGE`` with ``--reuse REUSE`` (a finished build), or the path of
  ``--set STAGE=PATH`` (that stage does not run: a fine-tuned pair for ``{soup}``, the pair the export reads; a
  bundle folder for a stage others take ``bundle_from``). ``--to-stage NAME`` stops after NAME; ``--only NAME``
  runs NAME alone.
- ``--set VAR=VALUE`` replaces a ``[vars]`` value and ``--set STAGE.KEY=VALUE`` an argument (``--set
  fit.limit=5000``; ``false`` leaves a switch or flag out); values read as TOML (5000, 0.05, true), else as text.
- ``--with NAME`` also runs an optional stage (``optional = true``: a measurement, say).

The recipe's ``bundle`` stage's bundle is copied to ``OUT/bundle`` when that stage runs (or is up to date), and its
manifest's provenance records the recipe: name, sha256, settings and what was set or given. ``--record BUNDLE`` runs
nothing and records the recipe in BUNDLE's manifest, for a bundle whose stages were run one by one (the shipped one:
the recipe's header says where they differ from it).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import json
import os
import runpy
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from training.data.location import default_data, require
from training.recipe import (  # noqa: F401  (RecipeError and toml are imported from here by training.data.assemble)
    PLACEHOLDER,
    ROOT,
    Command,
    Recipe,
    RecipeError,
    Stage,
    load_recipe,
    toml,
)
from training.recipe_args import MissingPackage, check_arguments, script_context


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
    """Runs a recipe's stages into ``out``: which of them run (``--from-stage``, ``--to-stage``, ``--only``,
    ``--with``), where the others are read from (``--reuse``, ``--set STAGE=PATH``), and the records that let a
    finished stage be skipped."""

    def __init__(self, recipe: Recipe, data: Path, out: Path, init_from: Path | None = None, *,
                 reuse: Path | None = None, from_stage: str | None = None, to_stage: str | None = None,
                 only: list[str] | None = None, with_optional: list[str] | None = None) -> None:
        self.recipe, self.data, self.out, self.init_from, self.reuse = recipe, data, out, init_from, reuse
        names = recipe.names()
        for name in [from_stage, to_stage, *(only or []), *(with_optional or [])]:
            if name is not None:
                recipe.stage(name)
        if only and (from_stage or to_stage):
            raise RecipeError("--only names the stages that run: not with --from-stage or --to-stage")
        first = names.index(from_stage) if from_stage else 0
        last = names.index(to_stage) if to_stage else len(names) - 1
        if first > last:
            raise RecipeError(f"--from-stage {from_stage} comes after --to-stage {to_stage}")
        chosen = set(only or [])
        self.selected = [s.name for s in recipe.stages if s.name not in recipe.given and not self.skipped(s) and (
            s.name in chosen if only else first <= names.index(s.name) <= last
            and (not s.optional or s.name in (with_optional or []) or s.name == from_stage))]
        self.forced = bool(only or from_stage)  # those stages run whatever their records say
        self.with_optional = with_optional or []

    def folder(self, stage: str) -> Path:
        if stage in self.recipe.given:
            return Path(self.recipe.given[stage])
        if self.reuse is not None and stage not in self.selected:
            return self.reuse / stage
        return self.out / stage

    def state_file(self, stage: str) -> Path:
        return self.folder(stage).parent / "state" / f"{stage}.json"

    def init(self) -> str | None:
        if self.init_from is not None:
            return str(self.init_from)
        return self.substitute(self.recipe.init, "init") if self.recipe.init else None

    def substitute(self, arg: str, stage: str) -> str:
        def one(m: Any) -> str:
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

    def argv(self, stage: Stage, command: Command) -> list[str]:
        """The command's argument list, every placeholder filled in (and the init flag on a stage's first)."""
        argv = [self.substitute(a, stage.name) for a in command.argv()]
        init = self.init()
        if stage.init_flag and init and command is stage.commands[0]:
            argv += [stage.init_flag, init]
        return argv

    def read_paths(self, stage: Stage) -> list[Path]:
        """What a stage reads from outside the build: its ``{data}`` arguments, the pair it starts from, given outputs."""
        paths = [Path(self.substitute(a, stage.name)) for c in stage.commands for a in c.argv() if "{data}" in a]
        init = self.init()
        if init and self.init_from is not None and (stage.init_flag or stage.reads_init):
            paths.append(Path(init))
        return paths + [self.folder(n) for n in stage.needs if n in self.recipe.given]

    def record(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.state_file(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def key(self, stage: Stage) -> str:
        needed = {n: (self.record(n) or {}).get("finished") for n in stage.needs if n not in self.recipe.given}
        blob = {"commands": stage.template(), "init": self.init() if stage.init_flag or stage.reads_init else None,
                "inputs": [fingerprint(p) for p in self.read_paths(stage)], "needs": needed}
        return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()

    def skipped(self, stage: Stage) -> bool:
        return stage.skip_with_init and self.init_from is not None

    def up_to_date(self, stage: Stage) -> bool:
        rec = self.record(stage.name)
        return rec is not None and rec.get("key") == self.key(stage) and self.folder(stage.name).is_dir()

    def check(self) -> list[str]:
        """Every command of the stages that run parsed by its module's parser (RecipeError on the first problem);
        returns the folders they read that are missing (stages that neither run now nor were run before)."""
        self.unavailable: list[tuple[str, MissingPackage]] = []  # (stage, what it needs and this environment lacks)
        for stage in self.recipe.stages:
            def argv(command: Command, stage: Stage = stage) -> list[str]:
                return self.argv(stage, command)
            try:
                check_arguments(stage, argv if stage.name in self.selected else None)
            except MissingPackage as e:
                if stage.name in self.selected:
                    self.unavailable.append((stage.name, e))
        missing = {n: self.folder(n) for s in self.selected for n in self.recipe.stage(s).needs
                   if n not in self.selected and not self.skipped(self.recipe.stage(n)) and not self.folder(n).exists()}
        return [f"{n} ({p})" for n, p in missing.items()]

    def plan(self) -> list[tuple[str, str]]:
        """(stage, what happens to it) for every stage: it runs when chosen and not up to date (or forced), or when
        it reads a stage that runs."""
        out: list[tuple[str, str]] = []
        runs: set[str] = set()
        for stage in self.recipe.stages:
            if stage.name in self.recipe.given:
                out.append((stage.name, f"given (--set {stage.name}={self.recipe.given[stage.name]})"))
            elif self.skipped(stage):
                out.append((stage.name, "skipped (--init-from)"))
            elif stage.optional and stage.name not in self.with_optional:
                out.append((stage.name, f"optional (--with {stage.name} runs it)"))
            elif stage.name not in self.selected:
                out.append((stage.name, f"not run (read from {self.folder(stage.name)})"))
            elif self.forced or not self.up_to_date(stage) or runs & set(stage.needs):
                runs.add(stage.name)
                out.append((stage.name, "runs"))
            else:
                out.append((stage.name, "up to date"))
        return out

    def too_big(self) -> list[str]:
        """The stages that run and peaked at more memory on the shipped run than this machine has."""
        total = memory_gb()
        return [f"stage {name!r} peaked at {peak:g} GB on the shipped run; this machine has {total:.1f} GB"
                for name, what in self.plan() if what == "runs"
                for peak in [self.recipe.stage(name).cost.get("memory_gb", 0.0)] if total and peak > total]

    def plan_lines(self) -> list[str]:
        """``plan`` with what each stage cost on the shipped run (the recipe's ``cost``) or, when this build ran it
        before, what it took here; and the sum over the stages that run."""
        lines, cpu, mixed, disk = [], 0.0, 0.0, 0.0
        for name, what in self.plan():
            stage = self.recipe.stage(name)
            seconds = (self.record(name) or {}).get("seconds")
            cost = describe_cost(stage.cost) + (f"; {seconds / 60:.1f} min here last time" if seconds else "")
            lines.append(f"{name:16} {what:13}  {cost}".rstrip())
            if what == "runs":
                cpu += stage.cost.get("cpu_minutes", 0.0)
                mixed += stage.cost.get("gpu_minutes") or stage.cost.get("cpu_minutes", 0.0)
                disk += stage.cost.get("disk_mb", 0.0)
        if cpu or mixed:
            lines.append(f"{'':16} {'in all':13}  {describe_cost({'cpu_minutes': cpu, 'disk_mb': disk})}"
                         + (f" ({minutes_in_words(mixed)} with the GPU stages on an H100)" if mixed < cpu else ""))
        return lines

    def build(self) -> Path | None:
        self.out.mkdir(parents=True, exist_ok=True)
        for stage in self.recipe.stages:
            if stage.name not in self.selected:
                continue
            if not self.forced and self.up_to_date(stage):
                say(f"== {stage.name}: up to date")
            else:
                self.run_stage(stage)
        return self.publish(self.recipe.bundle) if self.recipe.bundle in self.selected else None

    def run_stage(self, stage: Stage) -> None:
        here = self.folder(stage.name)
        here.mkdir(parents=True, exist_ok=True)
        self.state_file(stage.name).unlink(missing_ok=True)  # not done until it finishes again
        if stage.bundle_from:
            src = self.folder(stage.bundle_from)
            src = src if (src / "manifest.json").is_file() else src / "bundle"  # a given bundle, or a stage's
            shutil.rmtree(here / "bundle", ignore_errors=True)
            shutil.copytree(src, here / "bundle")
        t0 = time.time()
        for command in stage.commands:
            argv = self.argv(stage, command)
            stdout = self.substitute(command.stdout, stage.name) if command.stdout else None
            say(f"== {stage.name}: {shlex.join(argv)}" + (f" > {stdout}" if stdout else ""))
            call(command.kind, argv, stage.name, Path(stdout) if stdout else None)
        self.state_file(stage.name).parent.mkdir(parents=True, exist_ok=True)
        now = time.time_ns()  # stages that read this one run again after it runs again
        record = {"stage": stage.name, "key": self.key(stage), "seconds": round(time.time() - t0, 1),
                  "finished": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now // 10**9)) + f".{now % 10**9:09d}Z"}
        self.state_file(stage.name).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    def dry_run(self) -> list[str]:
        """The commands of the stages that would run, as shell lines."""
        lines: list[str] = []
        for name, what in self.plan():
            if what != "runs":
                lines.append(f"# {name}: {what}")
                continue
            stage = self.recipe.stage(name)
            lines.append(f"# {name}" + (f": starts from a copy of {self.folder(stage.bundle_from)}'s bundle"
                                        if stage.bundle_from else ""))
            for command in stage.commands:
                argv = self.argv(stage, command)
                head = {"module": "python -m ", "script": "python "}.get(command.kind, "# the build writes: ")
                out = f" > {self.substitute(command.stdout, name)}" if command.stdout else ""
                lines.append(head + shlex.join(argv) + out)
        return lines

    def publish(self, stage: str) -> Path:
        """Copy the bundle stage's bundle to OUT/bundle and record the recipe in its manifest."""
        src, dest = self.folder(stage) / "bundle", self.out / "bundle"
        if not (src / "manifest.json").is_file():
            raise RecipeError(f"stage {stage!r} left no bundle in {src}")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
        extra: dict[str, Any] = {"init_from": self.init_from.name} if self.init_from else {}
        if self.recipe.sets:
            extra["set"] = self.recipe.sets
        if self.reuse is not None or self.forced:
            extra["ran"] = self.selected
        record(dest, self.recipe, extra)
        say(f"== bundle: {dest} (recipe {self.recipe.name}, sha256 {self.recipe.sha256[:12]})")
        return dest


def say(line: str) -> None:
    print(line, flush=True)  # noqa: T201


def minutes_in_words(m: float) -> str:
    """``8.3 h``, ``15 min`` or ``<1 min``."""
    return f"{m / 60:.1f} h" if m >= 90 else f"{m:.0f} min" if m >= 1 else "<1 min"


def memory_gb() -> float:
    """This machine's memory in GB (0: unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return 0.0


def describe_cost(cost: dict[str, float]) -> str:
    """A stage's ``cost`` in words: ``8.3 h on 2 CPU cores, 4 min on an H100; 60 MB, peak 3.5 GB``."""
    where = [f"{minutes_in_words(cost[k])} on {label}" for k, label in (("cpu_minutes", "2 CPU cores"),
                                                              ("gpu_minutes", "an H100")) if cost.get(k)]
    size = [f"{cost['disk_mb'] / 1000:.1f} GB" if cost["disk_mb"] >= 1000 else f"{cost['disk_mb']:.0f} MB"
            ] if cost.get("disk_mb") else []
    size += [f"peak {cost['memory_gb']:g} GB"] if cost.get("memory_gb") else []
    return "; ".join(filter(None, [", ".join(where), ", ".join(size)]))


def record(bundle: Path, recipe: Recipe, extra: dict[str, Any]) -> None:
    """Write the recipe (name, sha256, settings and ``extra``) into ``bundle``'s manifest, as provenance.recipe."""
    path = bundle / "manifest.json"
    if not path.is_file():
        raise RecipeError(f"{bundle} has no manifest.json (a bundle folder)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest.setdefault("provenance", {})["recipe"] = {
        "name": recipe.name, "sha256": recipe.sha256, "settings": recipe.settings, **extra}
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def call(kind: str, argv: list[str], stage: str, stdout: Path | None = None) -> None:
    """One command of a stage, in this process (its printed output into ``stdout``); RecipeError when it fails."""
    if kind == "write_json":
        path = Path(argv[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(json.loads(argv[2]), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return
    if kind == "merge_json":
        merged = {}
        for item in argv[2:]:
            key, _, file = item.partition("=")
            merged[key] = json.loads(Path(file).read_text(encoding="utf-8"))
        Path(argv[1]).write_text(json.dumps(merged, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return
    label = f"python -m {argv[0]}" if kind == "module" else f"python {argv[0]}"
    with contextlib.ExitStack() as stack:
        if stdout is not None:
            stdout.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(contextlib.redirect_stdout(stack.enter_context(stdout.open("w", encoding="utf-8"))))
        try:
            if kind == "module":
                code = importlib.import_module(argv[0]).main(argv[1:])
            else:
                with script_context(argv[0], argv[1:]):
                    runpy.run_path(str(ROOT / argv[0]), run_name="__main__")
                code = None
        except SystemExit as e:
            code = e.code
        except Exception as e:  # a module's own error: one line naming the stage (the module's log says more)
            raise RecipeError(f"stage {stage!r}: {label} failed: {type(e).__name__}: {e}") from e
    if code not in (None, 0):
        detail = f": {code}" if isinstance(code, str) else f" (exit {code})"
        raise RecipeError(f"stage {stage!r}: {label} failed{detail}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipe", default="default", help="a recipe's name (training/recipes/NAME.toml) or a .toml path")
    ap.add_argument("--data", type=Path, default=default_data(),
                    help="the data folder (default $CSC_DATA or ../shared/data; docs/data.md)")
    ap.add_argument("--out", type=Path, default=None, help="folder of the stages' outputs, their records and bundle/ "
                    "(default runs/RECIPE)")
    ap.add_argument("--init-from", "--pretrained", type=Path, default=None,
                    help="a pretrained pair (a pretraining run or snapshot folder, or a published ELECTRA's folder "
                         "with discriminator/ and generator/) that the recipe starts from")
    ap.add_argument("--from-stage", metavar="NAME", help="run NAME and every later stage, whatever their records say")
    ap.add_argument("--to-stage", metavar="NAME", help="stop after NAME")
    ap.add_argument("--only", metavar="NAME", action="append", help="run NAME alone (repeatable)")
    ap.add_argument("--with", dest="with_optional", metavar="NAME", action="append",
                    help="also run the optional stage NAME (repeatable)")
    ap.add_argument("--set", dest="sets", metavar="NAME=VALUE", action="append", default=[],
                    help="VAR=VALUE: a [vars] value; STAGE.KEY=VALUE: a stage's argument; STAGE=PATH: that stage's "
                    "output is PATH and the stage does not run (repeatable)")
    ap.add_argument("--reuse", type=Path, metavar="DIR", help="read the stages that do not run from DIR (a build's --out)")
    ap.add_argument("--plan", action="store_true", help="print what would run, run nothing")
    ap.add_argument("--dry-run", action="store_true", help="print the commands that would run, run nothing")
    ap.add_argument("--record", type=Path, default=None, metavar="BUNDLE",
                    help="run nothing: record the recipe in BUNDLE's manifest (a bundle whose stages were run one "
                    "by one, as the recipe's header says)")
    args = ap.parse_args(argv)
    try:
        recipe = load_recipe(args.recipe, args.sets)
        if args.record is not None:
            record(args.record, recipe, {"recorded": "with --record: the stages were run one by one; the recipe's "
                                         "header lists where they differ from it"})
            return 0
        if args.out is None:
            args.out = Path("runs") / recipe.name
            say(f"# outputs in {args.out} (--out DIR to choose)")
        require([args.data], args.data)
        if args.init_from is not None and not (args.init_from / "discriminator").is_dir():
            raise RecipeError(f"--init-from {args.init_from}: no discriminator/ there (a pretrained pair's folder)")
        if args.init_from is not None and not any(s.init_flag or s.reads_init for s in recipe.stages):
            raise RecipeError(f"recipe {recipe.name!r} has no stage that starts from a pair (init_flag, {{init}})")
        builder = Builder(recipe, args.data, args.out, args.init_from, reuse=args.reuse, from_stage=args.from_stage,
                          to_stage=args.to_stage, only=args.only, with_optional=args.with_optional)
        missing = builder.check()
        if args.plan or args.dry_run:
            for line in builder.plan_lines() if args.plan else []:
                say(line)
            for line in builder.dry_run() if args.dry_run else []:
                say(line)
            for m in missing:
                say(f"# missing: {m}")
            if builder.unavailable:
                packages = sorted({e.package for _, e in builder.unavailable})
                say(f"# not installed here: {', '.join(packages)}, which stages "
                    f"{', '.join(name for name, _ in builder.unavailable)} need: install the training extra "
                    "(pip install torch==2.13.0, then pip install -e '.[train]')")
            for line in builder.too_big():
                say(f"# {line}")
            return 0
        if builder.unavailable:
            name, error = builder.unavailable[0]
            raise RecipeError(f"stage {name!r}: {error}")
        for line in builder.too_big():
            sys.stderr.write(f"warning: {line}\n")
        if missing:
            raise RecipeError(f"the stages that run read {', '.join(missing)}, which neither run now nor are there "
                              f"(run them, --reuse a build that has them, or --set STAGE=PATH)")
        builder.build()
    except RecipeError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the stage that ran is not recorded as done, the ones before it are
        sys.stderr.write("\ninterrupted; run the same command again to resume (finished stages are skipped, "
                         "pretraining and fine-tuning go on from their last checkpoint)\n")
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
