"""training.networks.soup: the weighted mean of pairs' weights, readable by the exporter; clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, build_tiny_bundle

pytestmark = pytest.mark.needs_torch


@pytest.fixture(scope="module")
def two_pairs(tmp_path_factory):
    base = tmp_path_factory.mktemp("soup")
    return build_tiny_bundle(base / "a", seed=0), build_tiny_bundle(base / "b", seed=1)


def soup_cli(*args) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "training.networks.soup", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_each_weight_is_the_weighted_mean(two_pairs, tmp_path):
    from safetensors.torch import load_file

    a, b = two_pairs
    out = tmp_path / "soup"
    proc = soup_cli("--pairs", a, b, "--weights", "0.25,0.75", "--out", out)
    assert proc.returncode == 0, proc.stderr
    for net in ("discriminator", "generator"):
        wa, wb, mixed = (load_file(p / net / "model.safetensors") for p in (a, b, out))
        assert mixed.keys() == wa.keys()
        differs = 0
        for k, v in mixed.items():
            expected = 0.25 * wa[k].float() + 0.75 * wb[k].float()
            assert (v - expected).abs().max().item() < 1e-6, k
            differs += int(not bool((v == wa[k].float()).all()))
        assert differs > 0  # the two random pairs differ, so the soup is neither of them
    provenance = json.loads((out / "provenance.json").read_text(encoding="utf-8"))
    assert provenance["soup"]["weights"] == [0.25, 0.75]
    assert provenance["note"] == "random weights, for tests"  # the first pair's record, kept


def test_the_soup_exports(two_pairs, tmp_path):
    from training.bundle.export import load_pair

    a, b = two_pairs
    out = tmp_path / "soup"
    assert soup_cli("--pairs", a, b, "--weights", "0.5,0.5", "--out", out).returncode == 0
    disc, gen, vocab = load_pair(out / "discriminator", out / "generator")
    assert vocab.read_text(encoding="utf-8") == (a / "discriminator" / "vocab.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("weights, words", [("0.5,0.6", "sum to 1"), ("1", "1 values for 2 pairs"),
                                            ("a,b", "numbers"), ("-0.5,1.5", "non-negative")])
def test_bad_weights_are_one_line_errors(two_pairs, tmp_path, weights, words):
    proc = soup_cli("--pairs", *two_pairs, f"--weights={weights}", "--out", tmp_path / "soup")
    assert proc.returncode == 2
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "soup").exists()


def test_pairs_of_other_shapes_are_refused(two_pairs, tmp_path):
    joint = build_tiny_bundle(tmp_path / "joint", joint=True)  # its generator is a head on the discriminator
    proc = soup_cli("--pairs", two_pairs[0], joint, "--weights", "0.5,0.5", "--out", tmp_path / "soup")
    assert proc.returncode == 2 and proc.stderr.startswith("error: pair 2 has other weights than pair 1")
    assert not (tmp_path / "soup").exists()


def test_one_pair_is_refused(two_pairs, tmp_path):
    proc = soup_cli("--pairs", two_pairs[0], "--weights", "1", "--out", tmp_path / "soup")
    assert proc.returncode == 2 and proc.stderr.strip() == "error: --pairs needs two or more pairs"
