"""docs/model-card.md is what training.bundle.model_card writes from the committed bundle, so the two cannot drift."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from conftest import ROOT

from training.bundle import model_card
from training.data import splits

BUNDLE = ROOT / "data" / "electra_models" / "default"


def test_committed_card_is_what_the_command_writes(tmp_path):
    out = tmp_path / "card.md"
    res = subprocess.run([sys.executable, "-m", "training.bundle.model_card", "--model", str(BUNDLE), "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    committed = (ROOT / "docs" / "model-card.md").read_text(encoding="utf-8")
    assert out.read_text(encoding="utf-8") == committed, (
        "docs/model-card.md is stale: python -m training.bundle.model_card --model data/electra_models/default "
        "--out docs/model-card.md")


def test_card_states_the_manifests_figures_and_every_training_files_terms():
    manifest = json.loads((BUNDLE / "manifest.json").read_text(encoding="utf-8"))
    card = model_card.render(BUNDLE)
    f1 = manifest["metrics"]["sighan15_test"]["sentence_correction"]["f1"]
    assert f"| {f1:.3f} |" in card
    assert f"threshold {manifest['ranker']['threshold']} with the LM" in card
    for name in manifest["provenance"]["pretraining"]["corpus"]:
        assert f"| `{name}` |" in card and name in model_card.DATA_TERMS
    assert "not recorded" not in card
    assert "Apache-2.0" in card and "research" in card


def test_real_pairs_are_the_files_training_splits_reads():
    assert (splits.SIGHAN_TRAIN.split("/")[-1], splits.CSC_HARD_TRAIN.split("/")[-1]) == model_card.REAL_PAIRS


def test_an_unknown_corpus_file_is_flagged_not_hidden(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(BUNDLE, bundle, ignore=shutil.ignore_patterns("*.onnx", "*.npy", "*.npz", "*.safetensors"))
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    manifest["provenance"]["pretraining"]["corpus"].append("mine.txt.gz")
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    card = model_card.render(bundle)
    assert "| `mine.txt.gz` | not recorded |" in card


def test_a_folder_without_a_manifest_is_one_line_on_stderr(tmp_path):
    res = subprocess.run([sys.executable, "-m", "training.bundle.model_card", "--model", str(tmp_path), "--out",
                          str(tmp_path / "card.md")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [f"error: {tmp_path / 'manifest.json'} not found"]
    assert not (tmp_path / "card.md").exists()
