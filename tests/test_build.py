"""python -m training.build: the shipped recipe (training/recipes/default.toml), sizes shrunk, end to end on a tiny
data folder; a second run skips every stage, a changed setting runs that stage and those that read it again; a
candidate bundle from another pair (--from-stage, --reuse, --set) and the pair recipe on what it built. The recipe's
typed tables expand to the argument lists the recipe's earlier format gave, and a bad recipe fails before anything
runs, in one line naming the stage and key."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from test_training_pipeline import CORPUS

from training import build
from training.fitting.ranker import PRODUCTS
from training.recipe import flags
from training.recipe_args import parser_of, restated_defaults

DEFAULT = ROOT / "training" / "recipes" / "default.toml"
OLD_ARGV = ROOT / "tests" / "golden" / "recipe_default_argv.json"  # default.toml's commands as its list format gave

# Only sizes change (and the name), some set where default.toml leaves a module's default; every stage, command and
# flag is default.toml's. (old, new, how many times)
TINY = [
    ('name = "default"\nbundle', 'name = "tiny"\nbundle', 1),
    ('init = "{pretrain_cpu}/snapshots/tok0080.0M"', 'init = "{pretrain_cpu}"', 1),
    ("max-steps = 24500", 'max-steps = 4\nconfig = "debug"\nbatch-size = 4\nseq-len = 32\neval-every = 2', 1),
    ("stop-after = 19532", "stop-after = 3", 1),
    ("batch-size = 512\nmax-steps = 5567", 'batch-size = 4\nseq-len = 32\nconfig = "debug"\nmax-steps = 3', 1),
    ("batch-size = 128", "batch-size = 4", 2),
    ("max-steps = 7000", "max-steps = 3", 1),
    ("eval-every = 1000", "eval-every = 2", 3),
    ("eval-every = 1500", "eval-every = 2", 1),
    ("eval-every = 800", "eval-every = 2", 1),
    ("n = 2100000\ndistinct = 520000", "n = 60\ndistinct = 5", 1),
    ("n = 12000", "n = 20", 1),
    ("batch-size = 256", "batch-size = 4", 2),
    ("max-steps = 2699", "max-steps = 3", 1),
    ("max-steps = 1538", "max-steps = 3", 1),
    ("max-steps = 1600", "max-steps = 3", 1),
    ("n = 200000\ndistinct = 120000", "n = 60\ndistinct = 5", 1),
    ("holdout = 1000  #", "holdout = 5  #", 1),
    ('prune = "0,0,5,8"', 'prune = "0,0,0,0"\nvocab-size = 300', 1),
    ("max-changed = 0.10", "max-changed = 1", 1),
    ('choose-on = "{native_dev}"', 'choose-on = "{native_dev}"\nmax-fpr-each = 1', 1),
    ('out = "{csc_data}/train.tsv"', 'out = "{csc_data}/train.tsv"\nn = 60', 1),
]


def tiny_recipe(path: Path) -> Path:
    text = DEFAULT.read_text(encoding="utf-8")
    for old, new, count in TINY:
        assert text.count(old) == count, old  # default.toml changed shape: update TINY
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


def tiny_data(root: Path) -> Path:
    """The data folder layout of docs/training.md, with tests/test_training_pipeline.py's tiny corpus."""
    (root / "corpus").mkdir(parents=True)
    (root / "csc").mkdir()
    with gzip.open(root / "corpus" / "tiny.txt.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    clauses = list(dict.fromkeys(c for line in CORPUS for c in re.split("[，。]", line) if len(c) >= 4))
    pairs = [f"{c[:1]}{'的' if c[1] != '的' else '地'}{c[2:]}\t{c}\n" for c in clauses]  # one error each
    half = len(pairs) // 2
    files = {"sighan_train.tsv": pairs[:half], "csc_hard_train.tsv": pairs[half:],
             "sighan15_test.tsv": pairs[::2], "wang271k_dev.tsv": pairs[1::2],
             **{f"ecspell_train/{d}.tsv": pairs[k::3] for k, d in enumerate(("law", "med", "odw"))},
             **{f"lemon_dev/{d}.tsv": pairs[k::4] for k, d in enumerate(("enc", "mec", "cot", "gam"))},
             "cscd_ns_dev.tsv": pairs[1::3]}
    for name, lines in files.items():
        (root / "csc" / name).parent.mkdir(exist_ok=True)
        (root / "csc" / name).write_text("".join(lines), encoding="utf-8")
    return root


def stages_said(out: str) -> dict[str, str]:
    """{stage: "runs" | "up to date"} from the build's log lines."""
    said: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith("== ") and ":" in line and not line.startswith("== bundle"):
            stage, what = line[3:].split(":", 1)
            said.setdefault(stage, "up to date" if what.strip() == "up to date" else "runs")
    return said


def planned(out: str) -> dict[str, str]:
    """--plan's stages and what happens to each (without their costs and the sum)."""
    said = {}
    for line in out.splitlines():
        if line.startswith(("#", " ")):
            continue
        name, rest = line.split(None, 1)
        said[name] = re.split(r"\s{2,}", rest.strip())[0]
    return said


@pytest.mark.slow
def test_tiny_default_recipe_builds_a_bundle_then_skips_what_is_done(tmp_path, capsys):
    from corrector import Corrector

    recipe, data, out = tiny_recipe(tmp_path / "tiny.toml"), tiny_data(tmp_path / "data"), tmp_path / "build"
    args = ["--recipe", str(recipe), "--data", str(data), "--out", str(out)]
    names = [s.name for s in build.load_recipe(str(recipe)).stages if not s.optional]
    assert build.main(args) == 0
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(names, "runs")

    fixer = Corrector.load(out / "bundle", device="cpu")
    text = "今天天汽很好，hello！"
    assert len(fixer.correct(text).target) == len(text)
    assert fixer.has_lm and fixer.bundle.manifest.ranker["fitted"] and fixer.networks.split  # body and head apart
    assert fixer.name == "default"  # the export's --name
    recorded = fixer.bundle.manifest.provenance["recipe"]
    assert recorded["name"] == "tiny" and recorded["sha256"] == hashlib.sha256(recipe.read_bytes()).hexdigest()
    assert [s["name"] for s in recorded["settings"]["stage"]] == [*names, "false_positives"]
    assert set(fixer.bundle.manifest.metrics) == {"sighan15_test", "sighan15_test_no_lm", "dev_split_lm_cross_fitted",
                                                  "dev_split_no_lm"}
    assert fixer.bundle.manifest.corrector_defaults == {"protect_foreign_names": 0.005, "rtd_floor": 0.003}
    assert fixer.ranker.meta["calibration_rule"]["with_lm"]["form"] == "logistic"  # the fit stage's calibration
    assert (out / "finetune" / "provenance.json").is_file() and (out / "lm" / "folds").is_dir()

    records = {n: (out / "state" / f"{n}.json").read_text(encoding="utf-8") for n in names}
    assert build.main(args) == 0  # everything done: nothing runs
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(names, "up to date")
    assert {n: (out / "state" / f"{n}.json").read_text(encoding="utf-8") for n in names} == records

    # one setting of the vetoes changed: the fitting stage and the one that starts from its bundle run again
    recipe.write_text(recipe.read_text(encoding="utf-8").replace("max-changed = 1", "max-changed = 1\nmin-edits = 4"),
                      encoding="utf-8")
    assert build.main([*args, "--plan"]) == 0
    again = ("fit", "metrics")
    optional = {"false_positives": "optional (--with false_positives runs it)"}
    assert planned(capsys.readouterr().out) == {n: ("runs" if n in again else "up to date") for n in names} | optional
    assert build.main(args) == 0
    assert stages_said(capsys.readouterr().out) == {n: ("runs" if n in again else "up to date") for n in names}
    veto = json.loads((out / "bundle" / "ranker.json").read_text(encoding="utf-8"))["meta"]["veto"]
    assert veto["min_edits"] == 4

    # from a given pair: the from-scratch pretraining is skipped, the pretraining from the pair and all after it run
    assert build.main([*args, "--init-from", str(out / "pretrain_cpu"), "--plan"]) == 0
    after = [n for n in names[names.index("pretrain"):]
             if n not in ("csc_native", "csc_newtext", "ranker_pairs")]  # synthetic pairs read no network: up to date
    assert planned(capsys.readouterr().out) == {
        n: "skipped (--init-from)" if n == "pretrain_cpu" else "runs" if n in after else "up to date"
        for n in names} | optional

    # a candidate bundle from another fine-tuned pair, measured (once benchmarks/bundle_point.sh): the stages
    # from export on, into their own folder, the earlier ones read from the build (benchmarks/false_positives.py,
    # --with false_positives, needs the corpus's edited files: not in the tiny data)
    cand = tmp_path / "candidate"
    assert build.main([*args[:4], "--out", str(cand), "--reuse", str(out), "--from-stage", "export",
                       "--set", f"soup={out / 'finetune'}"]) == 0
    ran = names[names.index("export"):]
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(ran, "runs")
    assert sorted(p.name for p in cand.iterdir()) == sorted([*ran, "bundle", "state"])
    cand_recipe = json.loads((cand / "bundle" / "manifest.json").read_text(encoding="utf-8"))["provenance"]["recipe"]
    assert cand_recipe["set"] == [f"soup={out / 'finetune'}"] and cand_recipe["ran"] == ran

    # the pair recipe (once benchmarks/pair_point.sh, refit_point.sh) on that pair, with the built bundle's evidence
    pair = tmp_path / "pair"
    assert build.main(["--recipe", "pair", "--data", str(data), "--out", str(pair), "--set", f"finetune={out / 'finetune'}",
                       "--set", f"shipped={out / 'bundle'}", "--set", "holdout=5", "--with", "refit",
                       "--set", "limit=20"]) == 0
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(["splits", "export", "nolm", "lm", "refit"], "runs")
    for mode, use_lm in (("nolm", False), ("lm", True)):
        chosen = json.loads((pair / mode / "choose.json").read_text(encoding="utf-8"))
        assert chosen["use_lm"] is use_lm and 0 < chosen["threshold"] < 1
        defaults = json.loads((pair / mode / "bundle" / "manifest.json").read_text(encoding="utf-8"))["corrector_defaults"]
        assert defaults == chosen  # SIGHAN-15 decoded at the threshold chosen on dev
        assert json.loads((pair / mode / "sighan15.json").read_text(encoding="utf-8"))["threshold"] == chosen["threshold"]
    assert {p.name for p in (pair / "refit").glob("*.json")} >= {"dev_lm.json", "sighan15_nolm.json", "ranker.json"}


FITTING = ("ranker", "veto", "threshold", "calibrate")  # the earlier format's fitting stages, now the fit stage
OWN = {"--model", "--out", "--report", "--cache"}  # each fitting command's own paths


def same(a: str, b: str) -> bool:
    try:
        return a == b or float(a) == float(b)
    except ValueError:
        return False


def flag_values(argv: list[str]) -> dict[str, list[str]]:
    """``["m", "--a", "1", "2", "--b"]`` -> ``{"--a": ["1", "2"], "--b": []}``."""
    out: dict[str, list[str]] = {}
    for a in argv[1:]:
        if a.startswith("--"):
            out[a] = []
        else:
            out[list(out)[-1]].append(a)
    return out


def parsed(argv: list[str]) -> dict:
    """A module's command as its parser reads it (every setting, defaults included)."""
    return vars(parser_of("module", argv[0]).parse_args(argv[1:]))


def test_default_recipe_runs_the_commands_of_its_earlier_format():
    """Every stage's commands, placeholders filled in as DATA and OUT/STAGE, run with the settings of the lists the
    recipe's list format gave (tests/golden/recipe_default_argv.json, dumped from it before the change), as each
    module's parser reads them: what the recipe no longer states is the module's default now. The four fitting
    stages are one now (training.fitting.fit writes ranker.json once): every setting they gave it has, with the
    same value."""
    old = json.loads(OLD_ARGV.read_text(encoding="utf-8"))
    recipe = build.load_recipe("default")
    builder = build.Builder(recipe, Path("DATA"), Path("OUT"))
    for stage in recipe.stages:
        if stage.optional or stage.name == "fit":
            continue
        new = [builder.argv(stage, c) for c in stage.commands]
        assert [c[0] for c in new] == [c[0] for c in old[stage.name]], stage.name
        for n, o in zip(new, old[stage.name]):
            if not n[0].startswith("training."):  # write_json, merge_json
                assert len(n) == len(o) and all(map(same, n, o)), (stage.name, n)
                continue
            now, then = parsed(n), parsed(o)
            if "progress" in now:  # --no-progress then; now a bar only on a terminal, which a build's log is not
                assert then["progress"] is False and now["progress"] is None
                now["progress"] = False
            assert now == then, (stage.name, {k: (v, then[k]) for k, v in now.items() if v != then[k]})
    assert [s.name for s in recipe.stages if not s.optional and s.name != "fit"] == [n for n in old if n not in FITTING]
    fit, export = (builder.argv(recipe.stage("fit"), c) for c in recipe.stage("fit").commands)
    given = parsed(fit)
    actions = parser_of("module", "training.fitting.fit")._option_string_actions
    renamed = {"--on": "--calibrate-on"}  # training.fitting.calibrate's --on
    for name in FITTING:
        for cmd in old[name]:
            if cmd[0] == "training.bundle.export":
                assert export[:2] + export[3:4] == cmd[:2] + cmd[3:4]
                continue
            for flag, values in flag_values(cmd).items():
                if flag == "--products":
                    assert values == [",".join(PRODUCTS)]  # the default of --products now
                elif flag not in OWN:
                    action = actions[renamed.get(flag, flag)]
                    have = given[action.dest]
                    if not values:  # a switch, or a flag with an optional value (its const)
                        assert have == (True if action.const is None else action.const), (name, flag)
                        continue
                    have = [str(v) for v in (have if isinstance(have, list) else [have])]
                    if flag in ("--choose-on", "--on"):  # the fifth native dev domain joined the four LEMON ones
                        assert have[-1] == "DATA/csc/cscd_ns_dev.tsv"
                        have = have[:-1]
                    assert len(have) == len(values) and all(map(same, have, values)), (name, flag, have)
    assert given["steps"] == ("ranker", "veto", "threshold", "calibration")
    pretrain = builder.argv(recipe.stage("pretrain"), recipe.stage("pretrain").commands[0])
    assert pretrain[-2:] == ["--init-from", "OUT/pretrain_cpu/snapshots/tok0080.0M"]  # the recipe's init
    # the list of the ranker's products is nowhere in the recipe, the dev split's size written once
    text = DEFAULT.read_text(encoding="utf-8")
    assert "lm_gain*pinyin" not in text
    assert [v for v in re.findall(r"holdout = (\S+)", text) if v[0].isdigit()] == ["1000"]


def test_recipes_state_only_where_they_differ_from_the_modules_defaults(tmp_path):
    """A module's defaults are the shipped run's: no recipe writes an argument with its module's default value (a
    [vars] value aside), and a recipe that does is named, stage and key."""
    for path in sorted((ROOT / "training" / "recipes").glob("*.toml")):
        assert restated_defaults(build.load_recipe(str(path))) == [], path.name
    text = DEFAULT.read_text(encoding="utf-8").replace("max-steps = 7000", "max-steps = 7000\nmask-prob = 0.0\nkeep = \"last\"")
    text = text.replace("n = 2100000", "n = 2100000\nno-progress = true")  # --no-progress: not the default (a bar on a tty)
    (tmp_path / "restating.toml").write_text(text.replace("n = 12000", "n = 12000\nmin-chars = 8\nprogress = false"),
                                            encoding="utf-8")
    assert restated_defaults(build.load_recipe(str(tmp_path / "restating.toml"))) == [
        "stage 'finetune' args.mask-prob: 0.0 is the default of python -m training.networks.finetune --mask-prob",
        "stage 'finetune' args.keep: 'last' is the default of python -m training.networks.finetune --keep",
        "stage 'ranker_pairs' args.min-chars: 8 is the default of python -m training.data.make_csc_data --min-chars",
        "stage 'ranker_pairs' args.progress: False is the default of python -m training.data.make_csc_data --progress",
    ]


def test_bad_recipes_and_arguments_exit_with_one_line_before_anything_runs(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    splits = '[[stage]]\nname = "a"\nmodule = "training.data.splits"\n'
    cases = {
        "missing.toml": ("", "does not exist"),
        "nostage.toml": ('name = "x"\n', "no [[stage]] tables"),
        "forward.toml": (splits + 'args = {out = "{later}"}\n[[stage]]\nname = "later"\nmodule = "training.data.splits"\n',
                         "stage 'a' args.out: reads {later}, which is not an earlier stage or a [vars] name"),
        "module.toml": ('[[stage]]\nname = "a"\nmodule = "os.system"\n', "stage 'a' module: 'os.system' is not a training module"),
        "parser.toml": ('[[stage]]\nname = "a"\nmodule = "training.data.location"\n',
                        "training.data.location has no parser(): not a command a recipe can check"),
        "key.toml": ('[[stage]]\nname = "a"\nruns = []\n', "stage 'a' has unknown keys ['runs']"),
        "top.toml": ('stages = 1\n' + splits, "unknown top-level keys ['stages']"),
        "reserved.toml": ('[[stage]]\nname = "bundle"\nmodule = "training.data.splits"\n',
                          "(not data, init, state, bundle), got 'bundle'"),
        "flag.toml": (splits + 'args = {holdouts = 5}\n', "stage 'a' args.holdouts: python -m training.data.splits has no --holdouts"),
        "switch.toml": (splits + 'args = {holdout = true}\n', "stage 'a' args.holdout: --holdout takes a value, not true/false"),
        "list.toml": (splits + 'args = {holdout = [1, 2]}\n', "stage 'a' args.holdout: --holdout takes one value, not a list"),
        "type.toml": (splits + 'args = {holdout = "many"}\n',
                      "stage 'a': python -m training.data.splits: argument --holdout: invalid int value: 'many'"),
        "table.toml": (splits + 'args = {holdout = {n = 1}}\n', "stage 'a' args.holdout: {'n': 1} is not text, a number"),
        "var.toml": ('[vars]\na = 1\n' + splits, "vars.a: a [vars] name is"),
        "inside.toml": ('[vars]\nl = [1, 2]\n' + splits + 'args = {out = "x{l}"}\n', "stage 'a' args.out: [vars] l is a list"),
        "both.toml": (splits + '[[stage.run]]\nmodule = "training.data.splits"\n', "either one command"),
        "helper.toml": ('[[stage]]\nname = "a"\nwrite_json = "x"\n', "stage 'a' value: expected a table"),
        "init.toml": ('[[stage]]\nname = "a"\nmodule = "training.networks.finetune"\nargs = {init = "{init}"}\n',
                      "stage 'a' reads {init}, but neither the recipe nor --init-from names one"),
        "cost.toml": ('[[stage]]\nname = "a"\ncost = {hours = 2}\nmodule = "training.data.splits"\n',
                      "stage 'a' cost: a table of non-negative numbers, keys among ['cpu_minutes'"),
    }
    for name, (text, message) in cases.items():
        if text:
            (tmp_path / name).write_text(text, encoding="utf-8")
        assert build.main(["--recipe", str(tmp_path / name), "--data", str(data), "--out", str(tmp_path / "o")]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (name, err)
        assert not (tmp_path / "o").exists(), name  # nothing ran
    bad_sets = {"nosuch=1": "'nosuch' is neither a stage, a STAGE.KEY nor a [vars] name", "holdout": "write NAME=VALUE",
                "a.holdout=x": "invalid int value: 'x'"}
    (tmp_path / "ok.toml").write_text(splits + 'args = {out = "{a}/dev.tsv"}\n', encoding="utf-8")
    for item, message in bad_sets.items():
        assert build.main(["--recipe", str(tmp_path / "ok.toml"), "--data", str(data), "--out", str(tmp_path / "o"),
                           "--set", item]) == 1
        assert message in capsys.readouterr().err, item
    # a stage whose command fails stops the build there and says which
    (tmp_path / "fails.toml").write_text('[[stage]]\nname = "a"\nmodule = "training.data.prepare"\n'
                                         'args = {corpus = "{data}/none", out = "{a}"}\n', encoding="utf-8")
    assert build.main(["--recipe", str(tmp_path / "fails.toml"), "--data", str(data), "--out", str(tmp_path / "o")]) == 1
    assert "stage 'a': python -m training.data.prepare failed" in capsys.readouterr().err
    assert not (tmp_path / "o" / "state" / "a.json").exists()
    assert build.main(["--recipe", "default", "--data", str(data), "--out", str(tmp_path / "o"),
                       "--init-from", str(tmp_path)]) == 1
    assert "no discriminator/ there" in capsys.readouterr().err


CHAIN = """name = "chain"
[vars]
holdout = 3
[[stage]]
name = "a"
module = "training.data.splits"
args = {data = "{data}", holdout = "{holdout}", out = "{a}/dev.tsv"}
[[stage]]
name = "b"
[[stage.run]]
write_json = "{b}/x.json"
value = {n = "{holdout}", from = "{a}/dev.tsv"}
[[stage.run]]
merge_json = "{b}/merged.json"
files = {x = "{b}/x.json"}
[[stage]]
name = "c"
module = "training.data.splits"
args = {data = "{data}", holdout = "{holdout}", out = "{c}/dev.tsv", train-file = "{a}/dev.tsv"}
[[stage]]
name = "d"
optional = true
module = "training.data.splits"
args = {data = "{data}", holdout = "{holdout}", out = "{d}/dev.tsv", check-train = "{b}/x.json"}
"""


def test_from_stage_to_stage_only_with_and_set_choose_what_runs_and_where_it_reads(tmp_path, capsys):
    """On a recipe of cheap stages: which stages --from-stage, --to-stage, --only and --with run, where the others are
    read (--reuse, --set STAGE=PATH), what --dry-run prints, and that a stage read from nowhere stops the build."""
    (tmp_path / "chain.toml").write_text(CHAIN, encoding="utf-8")
    data = tiny_data(tmp_path / "data")
    base = ["--recipe", str(tmp_path / "chain.toml"), "--data", str(data)]

    def plan(*more: str, out: Path = tmp_path / "o") -> dict[str, str]:
        assert build.main([*base, "--out", str(out), "--plan", *more]) == 0
        return planned(capsys.readouterr().out)
    assert plan() == {"a": "runs", "b": "runs", "c": "runs", "d": "optional (--with d runs it)"}
    assert plan("--to-stage", "b", "--with", "d")["c"].startswith("not run")
    assert build.main([*base, "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "o" / "b" / "x.json").read_text()) == {"n": 3, "from": str(tmp_path / "o" / "a" / "dev.tsv")}
    assert plan() == {"a": "up to date", "b": "up to date", "c": "up to date", "d": "optional (--with d runs it)"}
    assert plan("--set", "holdout=4") == {"a": "runs", "b": "runs", "c": "runs", "d": "optional (--with d runs it)"}
    assert plan("--from-stage", "b") == {"a": f"not run (read from {tmp_path / 'o' / 'a'})", "b": "runs", "c": "runs",
                                          "d": "optional (--with d runs it)"}
    assert plan("--only", "c", "--with", "d")["c"] == "runs"
    assert plan("--from-stage", "b", "--to-stage", "b", "--with", "d") == {
        "a": f"not run (read from {tmp_path / 'o' / 'a'})", "b": "runs",
        "c": f"not run (read from {tmp_path / 'o' / 'c'})", "d": "not run (read from " + str(tmp_path / "o" / "d") + ")"}
    given = tmp_path / "given"
    given.mkdir()
    (given / "dev.tsv").write_text("", encoding="utf-8")
    assert plan("--set", f"a={given}", out=tmp_path / "o2")["a"] == f"given (--set a={given})"

    # --reuse: the stages that do not run are read from the other build; --dry-run prints the commands, runs none
    assert build.main([*base, "--out", str(tmp_path / "o2"), "--reuse", str(tmp_path / "o"), "--from-stage", "c",
                       "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (f"python -m training.data.splits --data {data} --holdout 3 --out {tmp_path / 'o2' / 'c' / 'dev.tsv'} "
            f"--train-file {tmp_path / 'o' / 'a' / 'dev.tsv'}") in lines
    assert not (tmp_path / "o2").exists()
    assert build.main([*base, "--out", str(tmp_path / "o2"), "--reuse", str(tmp_path / "o"), "--only", "c"]) == 0
    assert stages_said(capsys.readouterr().out) == {"c": "runs"} and (tmp_path / "o2" / "bundle").exists() is False
    # read from nowhere: refused before anything runs, naming the stage and the folder
    assert build.main([*base, "--out", str(tmp_path / "o3"), "--from-stage", "c"]) == 1
    assert f"read a ({tmp_path / 'o3' / 'a'}), which neither run now nor are there" in capsys.readouterr().err
    assert not (tmp_path / "o3").exists()


def test_record_writes_the_recipe_into_a_bundles_manifest_and_nothing_else(tmp_path, capsys):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text(json.dumps({"name": "b", "provenance": {"pretraining": {"step": 3}}}),
                                          encoding="utf-8")
    assert build.main(["--recipe", "default", "--record", str(bundle)]) == 0
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    recipe = build.load_recipe("default")
    assert manifest["provenance"]["pretraining"] == {"step": 3} and manifest["name"] == "b"
    assert manifest["provenance"]["recipe"]["sha256"] == recipe.sha256 == hashlib.sha256(recipe.path.read_bytes()).hexdigest()
    assert manifest["provenance"]["recipe"]["settings"]["stage"][0]["name"] == "prepare"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"] and sorted(p.name for p in bundle.iterdir()) == ["manifest.json"]
    assert build.main(["--recipe", "default", "--record", str(tmp_path / "none")]) == 1
    assert "has no manifest.json" in capsys.readouterr().err
    (tmp_path / "data").mkdir()
    assert build.main(["--recipe", "default", "--data", str(tmp_path / "data"), "--plan"]) == 0  # before: --out needed
    assert "# outputs in runs/default (--out DIR to choose)" in capsys.readouterr().out


def test_a_plan_says_what_is_not_installed_and_what_needs_more_memory(tmp_path, capsys, monkeypatch):
    """Before: without the train extra, --plan ended in a ModuleNotFoundError traceback, and nothing said that the
    fit stage peaks at 18 GB before it started on a smaller machine (issue 72, 9)."""
    import importlib

    from training import recipe_args

    real = importlib.import_module

    def without_torch(name: str, *args: Any) -> Any:
        if name == "training.bundle.export":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real(name, *args)

    recipe_args.parser_of.cache_clear()
    monkeypatch.setattr(importlib, "import_module", without_torch)
    monkeypatch.setattr(build, "memory_gb", lambda: 8.0)
    (tmp_path / "data").mkdir()
    base = ["--recipe", "default", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "o")]
    try:
        assert build.main([*base, "--plan"]) == 0
        said = capsys.readouterr().out
        assert "# not installed here: torch, which stages export, evidence, fit, metrics need: install the training " \
               "extra (pip install torch==2.13.0, then pip install -e '.[train]')" in said
        assert "# stage 'fit' peaked at 18 GB on the shipped run; this machine has 8.0 GB" in said
        assert build.main([*base, "--only", "export"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: stage 'export': training.bundle.export needs the package 'torch'") and err.count("\n") == 1
    finally:
        recipe_args.parser_of.cache_clear()


def test_shipped_recipes_check_and_plan_every_stage_in_order(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    base = ["--data", str(tmp_path / "data"), "--out", str(tmp_path / "o"), "--plan"]
    assert build.main(["--recipe", "default", *base]) == 0
    said = capsys.readouterr().out
    plan = [line.split()[0] for line in said.splitlines() if not line.startswith(" ")]
    # each stage with what it cost on the shipped run, and the sum over the stages that run
    assert "pretrain_cpu     runs           8.3 h on 2 CPU cores; 1.5 GB" in said
    assert re.search(r"^ +in all +\d+\.\d h on 2 CPU cores; \d\.\d GB \(\d+\.\d h with the GPU stages on an H100\)$",
                     said, re.M), said
    assert plan == ["prepare", "similarity", "splits", "candidates", "lm", "csc_data", "pretrain_cpu", "pretrain",
                    "finetune", "csc_native", "finetune_native", "finetune_native2", "csc_newtext", "finetune_newtext",
                    "soup", "ranker_pairs", "export", "evidence", "fit", "metrics", "false_positives"]
    pair = tmp_path / "pair"
    (pair / "discriminator").mkdir(parents=True)
    assert build.main(["--recipe", "default", *base, "--init-from", str(pair)]) == 0
    assert "pretrain_cpu     skipped (--init-from)" in capsys.readouterr().out
    assert build.main(["--recipe", "pair", *base, "--init-from", str(pair), "--with", "refit"]) == 0
    assert planned(capsys.readouterr().out) == dict.fromkeys(["splits", "finetune", "export", "nolm", "lm", "refit"], "runs")
    assert build.main(["--recipe", "native", *base]) == 0  # its make_csc_data flags checked against the parser
    assert planned(capsys.readouterr().out) == dict.fromkeys(["prepare", "pairs"], "runs")
    assert build.main(["--recipe", "capacity", *base, "--set", "config=cpu-g4-10", "--set", "stack=true"]) == 0
    assert planned(capsys.readouterr().out) == dict.fromkeys(["prepare", "pretrain", "finetune", "export", "lodo",
                                                              "speed"], "runs")


def args_of(recipe: build.Recipe, stage: str, module: str) -> dict:
    """Every argument a stage's command of ``module`` runs with, the recipe's ([vars] put in) and the module's
    defaults, as its parser reads them (keyed by flag: ``max-steps``)."""
    (command,) = [c for c in recipe.stage(stage).commands if c.target == module]
    parsed = parser_of("module", module).parse_args(flags(command.args))
    return {key.replace("_", "-"): value for key, value in vars(parsed).items()}


def test_default_recipe_is_what_the_shipped_manifest_records():
    recipe = build.load_recipe("default")
    manifest = json.loads((ROOT / "data" / "electra_models" / "default" / "manifest.json").read_text(encoding="utf-8"))
    prov, ranker = manifest["provenance"], manifest["ranker"]
    assert prov["recipe"]["sha256"] == recipe.sha256, "the recipe changed: record it (python -m training.build --record)"
    assert prov["recipe"]["settings"] == recipe.settings and "recorded" in prov["recipe"]
    gpu = args_of(recipe, "pretrain", "training.networks.pretrain")
    assert gpu["max-steps"] == prov["pretraining"]["step"]
    tokens = gpu["max-steps"] * gpu["batch-size"] * gpu["seq-len"]
    added = prov["pretraining"]["tokens_seen"] - prov["pretraining"]["init_from"]["tokens_seen"]
    assert abs(tokens - added) / added < 0.01  # (padding makes a step's tokens a little less than its size)
    cpu = args_of(recipe, "pretrain_cpu", "training.networks.pretrain")
    assert cpu["stop-after"] * cpu["batch-size"] * cpu["seq-len"] == prov["pretraining"]["init_from"]["tokens_seen"]
    assert gpu["config"] == cpu["config"] == prov["pretraining"]["model_config"]
    ft = args_of(recipe, "finetune", "training.networks.finetune")
    native = [args_of(recipe, name, "training.networks.finetune") for name in ("finetune_native", "finetune_native2")]
    stages = [*prov["finetune_stages"], prov["finetune"]]  # each fine-tuning run, the first first
    assert [f["max-steps"] for f in (ft, *native)] == [s["steps"] for s in stages]
    assert [f["batch-size"] for f in native] == [256, 256] and native[1]["lr"] == 1.5e-4
    assert all(f["keep"] == "last" and f["generator-body"] == "discriminator" for f in (ft, *native))
    assert prov["generator_body"].startswith("the discriminator's") and stages[1]["train_pairs"] == 2_215_986
    soup = args_of(recipe, "soup", "training.networks.soup")  # the exported pair: finetune_native2's and one more
    assert [float(w) for w in soup["weights"].split(",")] == prov["soup"]["weights"]
    newtext = args_of(recipe, "finetune_newtext", "training.networks.finetune")
    (more,) = prov["soup"]["provenance"]
    assert (newtext["max-steps"], newtext["batch-size"], newtext["lr"]) == (
        more["finetune"]["steps"], more["finetune"]["config"]["batch_size"], more["finetune"]["config"]["lr"])
    assert newtext["keep"] == "last" and newtext["generator-body"] == "discriminator"
    assert more["finetune"]["train_pairs"] == 219_331
    assert str(args_of(recipe, "export", "training.bundle.export")["run"]) == "{soup}"
    lm = args_of(recipe, "lm", "training.evidence.char_lm")
    assert [int(x) for (p,) in [lm["prune"]] for x in p.split(",")] == manifest["lm"]["prune"]
    assert lm["order"] == [manifest["lm"]["order"]] and lm["smoothing"] == [manifest["lm"]["smoothing"]]
    assert lm["in-domain-weight"] == manifest["lm"]["in_domain"]["weight"]
    assert lm["in-domain-folds"] == ranker["rows_lm"]["folds"]
    cand = args_of(recipe, "candidates", "training.evidence.candidates")
    assert cand["pool-size"] == manifest["candidates"]["pool_size"]
    assert cand["min-pinyin"] == manifest["candidates"]["min_pinyin"]
    fit = args_of(recipe, "fit", "training.fitting.fit")
    assert list(PRODUCTS) == ranker["products"] == fit["products"].split(",") and fit["blend-on-dev"] == "networks"
    assert "products" not in recipe.stage("fit").commands[0].args  # the recipe leaves it to the module
    assert (int(fit["hidden"]), fit["max-fpr"]) == (ranker["hidden"], ranker["max_fpr"])
    assert fit["try-shortlists"] == "8,12,16" and fit["shortlist"] == 16
    assert ranker["shortlist"] in [int(k) for k in fit["try-shortlists"].split(",")]  # chosen on dev among them
    assert (fit["min-edits"], fit["max-precision"]) == (ranker["veto"]["min_edits"], ranker["veto"]["max_precision"])
    assert fit["max-changed"] == ranker["threshold_rule"]["max_changed"]
    assert fit["max-fpr"] == ranker["threshold_rule"]["max_fpr"]
    assert fit["max-fpr-each"] == ranker["threshold_rule"]["max_fpr_each"]
    assert sorted(Path(a).stem for a in fit["choose-on"]) == sorted(ranker["threshold_rule"]["choose_on"])
    assert ranker["synthetic_pairs"] == 12000 and "synthetic-pairs" in fit
    (write,) = [c for c in recipe.stage("evidence").commands if c.kind == "write_json"]
    assert write.args == manifest["corrector_defaults"]
    assert args_of(recipe, "export", "training.bundle.export")["cpu-onnx"] == manifest["cpu_onnx"]


def test_ctrl_c_says_how_to_resume_in_one_line(tmp_path, capsys, monkeypatch):
    """Before: Ctrl-C ended a build in a raw traceback."""
    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(build.Builder, "build", interrupted)
    data = tiny_data(tmp_path / "data")
    code = build.main(["--recipe", str(tiny_recipe(tmp_path / "tiny.toml")), "--data", str(data),
                       "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 130 and err.startswith("interrupted; run the same command again to resume") and "\n" not in err
