"""python -m training.build: the shipped recipe (training/recipes/default.toml), sizes shrunk, end to end on a tiny
data folder; a second run skips every stage, a changed setting runs that stage and those that read it again."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest
from conftest import ROOT
from test_training_pipeline import CORPUS

from training import build

DEFAULT = ROOT / "training" / "recipes" / "default.toml"

# Only sizes change (and the name); every stage, command and flag is default.toml's. (old, new, how many times)
TINY = [
    ('name = "default"', 'name = "tiny"', 1),
    ('init = "{pretrain_cpu}/snapshots/tok0080.0M"', 'init = "{pretrain_cpu}"', 1),
    ('"--config", "cpu-g4"', '"--config", "debug"', 2),
    ('"--max-steps", "24500"', '"--max-steps", "4"', 1),
    ('"--batch-size", "64", "--seq-len", "64"', '"--batch-size", "4", "--seq-len", "32"', 1),
    ('"--stop-after", "19532"', '"--stop-after", "3"', 1),
    ('"--batch-size", "512", "--seq-len", "64"', '"--batch-size", "4", "--seq-len", "32"', 1),
    ('"--max-steps", "5567"', '"--max-steps", "3"', 1),
    ('"--batch-size", "128"', '"--batch-size", "4"', 1),
    ('"--max-steps", "7000"', '"--max-steps", "3"', 1),
    ('"--eval-every", "500"', '"--eval-every", "2"', 1),
    ('"--eval-every", "1000"', '"--eval-every", "2"', 3),
    ('"--eval-every", "1500"', '"--eval-every", "2"', 1),
    ('"--n", "300000"', '"--n", "60"', 1),
    ('"--n", "2100000", "--distinct", "520000"', '"--n", "60", "--distinct", "5"', 1),
    ('"--n", "12000"', '"--n", "20"', 1),
    ('"--batch-size", "256"', '"--batch-size", "4"', 2),
    ('"--max-steps", "2699"', '"--max-steps", "3"', 1),
    ('"--max-steps", "1538"', '"--max-steps", "3"', 1),
    ('"--holdout", "1000"', '"--holdout", "5"', 9),
    ('"--in-domain-holdout", "1000"', '"--in-domain-holdout", "5"', 1),
    ('"--prune", "0,0,5,8"', '"--prune", "0,0,0,0", "--vocab-size", "300"', 1),
    ('"--max-changed", "0.10"', '"--max-changed", "1"', 1),
    ('"--max-fpr-each", "0.03"', '"--max-fpr-each", "1"', 1),
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
             **{f"lemon_dev/{d}.tsv": pairs[k::4] for k, d in enumerate(("enc", "mec", "cot", "gam"))}}
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


@pytest.mark.slow
def test_tiny_default_recipe_builds_a_bundle_then_skips_what_is_done(tmp_path, capsys):
    from corrector import Corrector

    recipe, data, out = tiny_recipe(tmp_path / "tiny.toml"), tiny_data(tmp_path / "data"), tmp_path / "build"
    args = ["--recipe", str(recipe), "--data", str(data), "--out", str(out)]
    names = [s.name for s in build.load_recipe(str(recipe)).stages]
    assert build.main(args) == 0
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(names, "runs")

    fixer = Corrector.load(out / "bundle", device="cpu")
    text = "今天天汽很好，hello！"
    assert len(fixer.correct(text).target) == len(text)
    assert fixer.has_lm and fixer.bundle.manifest.ranker["fitted"] and fixer.networks.split  # body and head apart
    assert fixer.name == "default"  # the export's --name
    recorded = fixer.bundle.manifest.provenance["recipe"]
    assert recorded["name"] == "tiny" and recorded["sha256"] == hashlib.sha256(recipe.read_bytes()).hexdigest()
    assert [s["name"] for s in recorded["settings"]["stage"]] == names
    assert set(fixer.bundle.manifest.metrics) == {"sighan15_test", "sighan15_test_no_lm", "dev_split_lm_cross_fitted",
                                                  "dev_split_no_lm"}
    assert fixer.bundle.manifest.corrector_defaults == {"protect_foreign_names": 0.005, "rtd_floor": 0.001}
    assert fixer.ranker.meta["calibration_rule"]["with_lm"]["form"] == "logistic"  # the calibrate stage
    assert (out / "finetune" / "provenance.json").is_file() and (out / "lm" / "folds").is_dir()

    records = {n: (out / "state" / f"{n}.json").read_text(encoding="utf-8") for n in names}
    assert build.main(args) == 0  # everything done: nothing runs
    assert stages_said(capsys.readouterr().out) == dict.fromkeys(names, "up to date")
    assert {n: (out / "state" / f"{n}.json").read_text(encoding="utf-8") for n in names} == records

    # one setting of the vetoes changed: that stage and the two that start from its bundle run again
    recipe.write_text(recipe.read_text(encoding="utf-8").replace('"--min-edits", "5"', '"--min-edits", "4"'),
                      encoding="utf-8")
    assert build.main([*args, "--plan"]) == 0
    planned = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    again = ("veto", "threshold", "calibrate", "metrics")
    assert planned == {n: ("runs" if n in again else "up to date") for n in names}
    assert build.main(args) == 0
    assert stages_said(capsys.readouterr().out) == {n: ("runs" if n in again else "up to date") for n in names}
    veto = json.loads((out / "bundle" / "ranker.json").read_text(encoding="utf-8"))["meta"]["veto"]
    assert veto["min_edits"] == 4

    # from a given pair: the from-scratch pretraining is skipped, the pretraining from the pair and all after it run
    assert build.main([*args, "--init-from", str(out / "pretrain_cpu"), "--plan"]) == 0
    planned = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    after = [n for n in names[names.index("pretrain"):]
             if n not in ("csc_native", "ranker_pairs")]  # the synthetic pairs read no network: up to date
    assert planned == {n: "skipped (--init-from)" if n == "pretrain_cpu" else "runs" if n in after else "up to date"
                       for n in names}


def test_bad_recipes_and_arguments_exit_with_one_line(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    cases = {
        "missing.toml": "does not exist",
        "nostage.toml": "no [[stage]] tables",
        "forward.toml": "reads {later}, which is not an earlier stage",
        "module.toml": "is neither a training module",
        "key.toml": "unknown keys ['runs']",
        "reserved.toml": "(not data, init, state, bundle), got 'bundle'",
    }
    (tmp_path / "reserved.toml").write_text('[[stage]]\nname = "bundle"\nrun = [["training.data.prepare"]]\n',
                                            encoding="utf-8")
    (tmp_path / "nostage.toml").write_text('name = "x"\n', encoding="utf-8")
    (tmp_path / "forward.toml").write_text('[[stage]]\nname = "a"\nrun = [["training.data.prepare", "{later}"]]\n'
                                           '[[stage]]\nname = "later"\nrun = [["training.data.prepare"]]\n', encoding="utf-8")
    (tmp_path / "module.toml").write_text('[[stage]]\nname = "a"\nrun = [["os.system", "ls"]]\n', encoding="utf-8")
    (tmp_path / "key.toml").write_text('[[stage]]\nname = "a"\nruns = []\n', encoding="utf-8")
    for name, message in cases.items():
        assert build.main(["--recipe", str(tmp_path / name), "--data", str(data), "--out", str(tmp_path / "o")]) == 1
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (name, err)
    # a stage whose command fails stops the build there and says which
    (tmp_path / "fails.toml").write_text('[[stage]]\nname = "a"\nrun = [["training.data.prepare", "--corpus", '
                                         '"{data}/none", "--out", "{a}"]]\n', encoding="utf-8")
    assert build.main(["--recipe", str(tmp_path / "fails.toml"), "--data", str(data), "--out", str(tmp_path / "o")]) == 1
    assert "stage 'a': python -m training.data.prepare failed" in capsys.readouterr().err
    assert not (tmp_path / "o" / "state" / "a.json").exists()
    assert build.main(["--recipe", "default", "--data", str(data), "--out", str(tmp_path / "o"),
                       "--init-from", str(tmp_path)]) == 1
    assert "no discriminator/ there" in capsys.readouterr().err


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
    assert build.main(["--recipe", "default"]) == 1
    assert "--out DIR is needed" in capsys.readouterr().err


def test_default_recipe_plan_names_every_stage_in_order(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    assert build.main(["--recipe", "default", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "o"),
                       "--plan"]) == 0
    plan = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert plan == ["prepare", "similarity", "splits", "candidates", "lm", "csc_data", "pretrain_cpu", "pretrain",
                    "finetune", "csc_native", "finetune_native", "finetune_native2", "ranker_pairs", "export",
                    "evidence", "ranker", "veto", "threshold", "calibrate", "metrics"]
    pair = tmp_path / "pair"
    (pair / "discriminator").mkdir(parents=True)
    assert build.main(["--recipe", "default", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "o"),
                       "--init-from", str(pair), "--plan"]) == 0
    assert "pretrain_cpu     skipped (--init-from)" in capsys.readouterr().out


def flags(recipe: build.Recipe, stage: str, module: str) -> dict[str, str]:
    """The flags of a stage's command of ``module``, each with the value after it ("" for a switch)."""
    (cmd,) = [c for s in recipe.stages if s.name == stage for c in s.run if c[0] == module]
    return {a: (cmd[i + 1] if i + 1 < len(cmd) and not cmd[i + 1].startswith("--") else "")
            for i, a in enumerate(cmd) if a.startswith("--")}


def test_default_recipe_is_what_the_shipped_manifest_records():
    recipe = build.load_recipe("default")
    manifest = json.loads((ROOT / "data" / "electra_models" / "default" / "manifest.json").read_text(encoding="utf-8"))
    prov, ranker = manifest["provenance"], manifest["ranker"]
    assert prov["recipe"]["sha256"] == recipe.sha256, "the recipe changed: record it (python -m training.build --record)"
    assert prov["recipe"]["settings"] == recipe.settings and "recorded" in prov["recipe"]
    gpu = flags(recipe, "pretrain", "training.networks.pretrain")
    assert int(gpu["--max-steps"]) == prov["pretraining"]["step"]
    tokens = int(gpu["--max-steps"]) * int(gpu["--batch-size"]) * int(gpu["--seq-len"])
    added = prov["pretraining"]["tokens_seen"] - prov["pretraining"]["init_from"]["tokens_seen"]
    assert abs(tokens - added) / added < 0.01  # (padding makes a step's tokens a little less than its size)
    cpu = flags(recipe, "pretrain_cpu", "training.networks.pretrain")
    assert int(cpu["--stop-after"]) * int(cpu["--batch-size"]) * int(cpu["--seq-len"]) == prov["pretraining"]["init_from"]["tokens_seen"]
    assert gpu["--config"] == cpu["--config"] == prov["pretraining"]["model_config"]
    ft = flags(recipe, "finetune", "training.networks.finetune")
    native = [flags(recipe, name, "training.networks.finetune") for name in ("finetune_native", "finetune_native2")]
    stages = [*prov["finetune_stages"], prov["finetune"]]  # each fine-tuning run, the first first
    assert [int(f["--max-steps"]) for f in (ft, *native)] == [s["steps"] for s in stages]
    assert [int(f["--batch-size"]) for f in native] == [256, 256] and float(native[1]["--lr"]) == 1.5e-4
    assert all(f["--keep"] == "last" and f["--generator-body"] == "discriminator" for f in (ft, *native))
    assert prov["generator_body"].startswith("the discriminator's") and stages[1]["train_pairs"] == 2_215_986
    lm = flags(recipe, "lm", "training.evidence.char_lm")
    assert [int(x) for x in lm["--prune"].split(",")] == manifest["lm"]["prune"]
    assert int(lm["--order"]) == manifest["lm"]["order"] and lm["--smoothing"] == manifest["lm"]["smoothing"]
    assert int(lm["--in-domain-weight"]) == manifest["lm"]["in_domain"]["weight"]
    assert int(lm["--in-domain-folds"]) == ranker["rows_lm"]["folds"]
    cand = flags(recipe, "candidates", "training.evidence.candidates")
    assert int(cand["--pool-size"]) == manifest["candidates"]["pool_size"]
    assert float(cand["--min-pinyin"]) == manifest["candidates"]["min_pinyin"]
    fit = flags(recipe, "ranker", "training.fitting.ranker")
    assert fit["--products"].split(",") == ranker["products"] and "--blend-on-dev" in fit
    assert (int(fit["--hidden"]), float(fit["--max-fpr"])) == (ranker["hidden"], ranker["max_fpr"])
    assert ranker["shortlist"] in (8, 16) and int(fit["--shortlist"]) == 16  # chosen on dev among --try-shortlists
    veto = flags(recipe, "veto", "training.fitting.pair_veto")
    assert (int(veto["--min-edits"]), float(veto["--max-precision"])) == (ranker["veto"]["min_edits"],
                                                                          ranker["veto"]["max_precision"])
    chosen = flags(recipe, "threshold", "training.fitting.threshold")
    assert float(chosen["--max-changed"]) == ranker["threshold_rule"]["max_changed"]
    assert float(chosen["--max-fpr"]) == ranker["threshold_rule"]["max_fpr"]
    assert float(chosen["--max-fpr-each"]) == ranker["threshold_rule"]["max_fpr_each"]
    cmd = next(c for s in recipe.stages if s.name == "threshold" for c in s.run)
    assert sorted(Path(a).stem for a in cmd if "lemon_dev" in a) == ranker["threshold_rule"]["choose_on"]
    assert ranker["synthetic_pairs"] == 12000 and "--synthetic-pairs" in fit
    (write,) = [c for s in recipe.stages if s.name == "evidence" for c in s.run if c[0] == "write_json"]
    assert json.loads(write[2]) == manifest["corrector_defaults"]
    assert flags(recipe, "export", "training.bundle.export")["--cpu-onnx"] == manifest["cpu_onnx"]
