"""The model bundle: layout, manifest and the one-line messages ``Corrector.load`` gives when it is wrong."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corrector import Corrector, CorrectorError
from corrector.bundle import FORMAT_VERSION, MANIFEST, REQUIRED_FILES, VOCAB, Bundle, sha256_file
from corrector.corrector import ENV_MODEL, default_model_path

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def bundle_copy(tiny_bundle, tmp_path) -> Path:
    """A private copy to break; the session bundle is never touched."""
    return Path(shutil.copytree(tiny_bundle, tmp_path / "copy"))


def manifest_of(bundle: Path) -> dict:
    return json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))


def write_manifest(bundle: Path, manifest: dict) -> None:
    (bundle / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")


def load_error(path: Path, **settings) -> str:
    with pytest.raises(CorrectorError) as info:
        Corrector.load(path, device="cpu", **settings)
    msg = str(info.value)
    assert "\n" not in msg.strip()
    return msg


# ---- a good bundle ------------------------------------------------------------------------------


def test_tiny_bundle_loads(tiny_bundle):
    b = Bundle.load(tiny_bundle)
    assert b.name == "tiny"
    assert b.max_seq_len == 64
    assert b.vocab_path == tiny_bundle / VOCAB
    assert b.corrector_defaults == {}


def test_manifest_describes_the_bundle(tiny_bundle):
    m = manifest_of(tiny_bundle)
    assert m["format_version"] == FORMAT_VERSION
    assert m["vocab_sha256"] == sha256_file(tiny_bundle / VOCAB)
    assert m["vocab_size"] == 21128
    assert m["onnx"]["opset"] >= 17
    assert set(m["onnx"]["max_abs_diff_vs_torch"]) == {"discriminator", "generator"}
    assert all(0 <= v <= 1e-3 for v in m["onnx"]["max_abs_diff_vs_torch"].values())
    assert m["provenance"] == {"note": "random weights, for tests"}
    for key in ("name", "version", "created", "metrics", "max_seq_len"):
        assert key in m
    assert set(REQUIRED_FILES) <= set(m["files"])
    on_disk = {str(p.relative_to(tiny_bundle)) for p in tiny_bundle.rglob("*") if p.is_file()}
    assert on_disk - {MANIFEST} == set(m["files"])


def test_loaded_corrector_describes_itself(tiny_corrector):
    assert tiny_corrector.name == "tiny"
    assert tiny_corrector.version == manifest_of(tiny_corrector.bundle.path)["version"]
    assert tiny_corrector.networks.provider == "CPUExecutionProvider"


def test_settings_override_bundle_defaults(bundle_copy):
    m = manifest_of(bundle_copy)
    m["corrector_defaults"] = {"threshold": 0.7, "top_k": 7}
    write_manifest(bundle_copy, m)
    fix = Corrector.load(bundle_copy, device="cpu", threshold=0.2)
    assert fix.config.threshold == 0.2
    assert fix.config.top_k == 7


def test_old_manifest_with_retired_settings_loads(bundle_copy, forced_corrector):
    """Settings of the hand-set decoder that the ranker replaced are ignored in a bundle's manifest."""
    m = manifest_of(bundle_copy)
    m["corrector_defaults"] = {"threshold": 0.0, "verify": True, "verify_threshold": 0.9, "mask_suspects": True,
                               "mask_threshold": 0.3, "min_similarity": 0.5, "min_shape_similarity": 0.5,
                               "sim_weight": 2.0, "freq_weight": 0.1, "margin": 1.0, "confusion_bonus": 3.0}
    write_manifest(bundle_copy, m)
    fix = Corrector.load(bundle_copy, device="cpu")
    assert fix.config == forced_corrector.config
    texts = ["今天天汽很好", "我们去公园散步吧"]
    assert [c.target for c in fix.correct_batch(texts)] == [c.target for c in forced_corrector.correct_batch(texts)]


def test_ranker_json_gives_weights_and_threshold(bundle_copy):
    from corrector.rank import HEURISTIC, RankerWeights, Scorer

    assert Corrector.load(bundle_copy, device="cpu").ranker == HEURISTIC  # no ranker.json: the hand-set one
    ranker = RankerWeights(Scorer({"custom": 10.0}), Scorer({"custom": 9.0}), {"gen_lp": 1.0},
                           threshold=0.9999, threshold_no_lm=0.9, meta={"fitted": True})
    (bundle_copy / "ranker.json").write_text(json.dumps(ranker.to_dict()), encoding="utf-8")
    fix = Corrector.load(bundle_copy, device="cpu", confusions=[("汽", "气")])
    assert fix.ranker == ranker
    # no LM in this bundle: the no-LM scorer and threshold. 汽's rows: keep, top_k=5 generator
    # candidates (4 when 汽 is among them) and 气, all scored 0 but 气 (9): P(气) = e^9 / (e^9 + rows - 1)
    ex = fix.explain("今天天汽很好", shown=100)
    rows = 1 + len(ex.chars[3].candidates)
    p = math.exp(9.0) / (math.exp(9.0) + rows - 1)
    assert 0.9 < p < 0.9999  # applied only under the no-LM threshold
    assert [(e.position, e.target, e.confidence) for e in ex.correction.edits] == [(3, "气", round(p, 4))]
    assert fix.correct("今天天汽很好", threshold=0.9999).edits == []  # a call's threshold wins


@pytest.mark.parametrize("content, words", [
    ("{", ["ranker.json"]), ('{"with_lm": {"nope": 1}, "shortlist": {}}', ["ranker.json", "nope"]),
    ('{"with_lm": {"keep": 1}, "shortlist": {"rtd": 1}}', ["ranker.json", "rtd"]),
    ('{"with_lm": {"linear": {}, "hidden": {"keep": [1, 2]}, "bias": [0], "out": [1]}, "shortlist": {}}',
     ["ranker.json", "hidden"]),
    ('{"shortlist": {}}', ["ranker.json", "with_lm"]),
])
def test_bad_ranker_json(bundle_copy, content, words):
    (bundle_copy / "ranker.json").write_text(content, encoding="utf-8")
    msg = load_error(bundle_copy)
    assert all(w in msg for w in words), msg


def test_bad_candidate_table(bundle_copy):
    (bundle_copy / "candidates").mkdir()
    assert "candidates.npz" in load_error(bundle_copy)
    (bundle_copy / "candidates" / "candidates.npz").write_bytes(b"not a zip")
    assert "candidates.npz" in load_error(bundle_copy)


# ---- broken bundles -----------------------------------------------------------------------------


def test_missing_directory(tmp_path):
    msg = load_error(tmp_path / "nowhere")
    assert "no model bundle" in msg and "nowhere" in msg


def test_missing_manifest(bundle_copy):
    (bundle_copy / MANIFEST).unlink()
    msg = load_error(bundle_copy)
    assert "manifest.json" in msg and "missing" in msg


def test_manifest_not_json(bundle_copy):
    (bundle_copy / MANIFEST).write_text("{not json", encoding="utf-8")
    msg = load_error(bundle_copy)
    assert "manifest.json" in msg and "not valid JSON" in msg


def test_manifest_not_an_object(bundle_copy):
    (bundle_copy / MANIFEST).write_text("[1, 2]", encoding="utf-8")
    assert "JSON object" in load_error(bundle_copy)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 98, None, "1"])
def test_incompatible_format_version(bundle_copy, version):
    m = manifest_of(bundle_copy)
    if version is None:
        del m["format_version"]
    else:
        m["format_version"] = version
    write_manifest(bundle_copy, m)
    msg = load_error(bundle_copy)
    assert "format version" in msg and repr(version) in msg


@pytest.mark.parametrize("key", ["vocab_sha256", "max_seq_len"])
def test_manifest_missing_key(bundle_copy, key):
    m = manifest_of(bundle_copy)
    del m[key]
    write_manifest(bundle_copy, m)
    assert key in load_error(bundle_copy)


@pytest.mark.parametrize("rel", [
    "onnx/generator.onnx", "onnx/discriminator.onnx", "discriminator/config.json", "generator/vocab.txt",
    "similarity/pinyin.tsv", "similarity/shape.tsv",
    "similarity/meta.json",  # listed in the manifest only, not a required file
])
def test_missing_file(bundle_copy, rel):
    (bundle_copy / rel).unlink()
    msg = load_error(bundle_copy)
    assert "missing" in msg and rel in msg


def test_a_bundle_without_its_torch_weights_loads_and_corrects_the_same(bundle_copy, tiny_bundle):
    """The wheel installs inference files only: a bundle without discriminator/ and generator/model.safetensors
    (training's files) loads and gives the same edits."""
    from corrector import Corrector
    from corrector.bundle import TRAINING_FILES

    for rel in TRAINING_FILES:
        (bundle_copy / rel).unlink()
    Bundle.load(bundle_copy)
    texts = ["我门一起去吃饭吧。", "他以经知道了。"]
    assert Corrector.load(bundle_copy).correct_batch(texts) == Corrector.load(tiny_bundle).correct_batch(texts)


def test_vocab_hash_mismatch(bundle_copy):
    with open(bundle_copy / VOCAB, "a", encoding="utf-8") as f:
        f.write("extra\n")
    msg = load_error(bundle_copy)
    assert "vocab hash mismatch" in msg and VOCAB in msg


def test_generator_vocab_differs(bundle_copy):
    with open(bundle_copy / "generator/vocab.txt", "a", encoding="utf-8") as f:
        f.write("extra\n")
    assert "generator/vocab.txt" in load_error(bundle_copy)


@pytest.mark.parametrize("device", ["cpu", "auto"])
@pytest.mark.parametrize("net", ["discriminator", "generator"])
def test_corrupt_onnx(bundle_copy, net, device):
    (bundle_copy / f"onnx/{net}.onnx").write_bytes(b"\x00garbage, not a protobuf\xff" * 100)
    with pytest.raises(CorrectorError) as info:
        Corrector.load(bundle_copy, device=device)
    msg = str(info.value)
    assert "corrupt" in msg and f"{net}.onnx" in msg and "\n" not in msg


def test_swapped_onnx_networks(bundle_copy):
    d, g = bundle_copy / "onnx/discriminator.onnx", bundle_copy / "onnx/generator.onnx"
    d_bytes = d.read_bytes()
    d.write_bytes(g.read_bytes())
    g.write_bytes(d_bytes)
    msg = load_error(bundle_copy)
    assert "discriminator.onnx" in msg and "inputs" in msg


def test_bad_similarity_table(bundle_copy):
    (bundle_copy / "similarity/pinyin.tsv").write_text("not a table row\n", encoding="utf-8")
    assert "pinyin.tsv" in load_error(bundle_copy)


def test_unknown_default_in_manifest(bundle_copy):
    m = manifest_of(bundle_copy)
    m["corrector_defaults"] = {"no_such_setting": 1}
    write_manifest(bundle_copy, m)
    assert "no_such_setting" in load_error(bundle_copy)


@pytest.mark.parametrize(("settings", "word"), [
    ({"threshold": 2.0}, "threshold"), ({"top_k": -1}, "top_k"), ({"max_edits": -1}, "max_edits"),
    ({"use_lm": "yes"}, "use_lm"), ({"shortlist": 0}, "shortlist"), ({"top_k": 1.5}, "top_k"),
    ({"verify": False}, "verify"), ({"mask_threshold": 0.3}, "mask_threshold"),  # retired: unknown to a caller
    ({"confusions": [("汽车", "气")]}, "single characters"), ({"bogus": 1}, "bogus"),
])
def test_bad_settings(tiny_bundle, settings, word):
    assert word in load_error(tiny_bundle, **settings)


def test_device_cuda_loads_or_says_why(tiny_bundle):
    try:
        fix = Corrector.load(tiny_bundle, device="cuda")
    except CorrectorError as e:
        assert "CUDA" in str(e)
    else:
        assert fix.networks.provider == "CUDAExecutionProvider"


def test_the_reason_for_the_cpu_names_what_to_install(monkeypatch):
    """Whatever keeps the networks off the GPU is said in one line: the CPU asked for, the CPU build of ONNX
    Runtime (the gpu extra), the CPU build shadowing an installed GPU one (how to repair it), no GPU device."""
    import importlib.metadata

    import onnxruntime as ort

    from corrector.runtime import sessions as runtime

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert runtime.provider_reason("cpu") == "the CPU was asked for"

    def no_gpu_wheel(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_gpu_wheel)
    assert "CPU build" in runtime.provider_reason("auto") and "gpu extra" in runtime.provider_reason("auto")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.26.0")
    shadowed = runtime.provider_reason("auto")
    assert "onnxruntime-gpu 1.26.0 is installed" in shadowed and "pip uninstall -y onnxruntime" in shadowed
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(runtime, "_gpu_device_files", lambda: False)
    assert runtime.provider_reason("auto") == "no NVIDIA GPU device on this machine"
    monkeypatch.setattr(runtime, "_gpu_device_files", lambda: True)
    assert "did not start" in runtime.provider_reason("auto")


def test_auto_device_prints_nothing(tiny_bundle):
    """Probing for CUDA on a machine without it must not spam the log."""
    code = f"from corrector import Corrector; Corrector.load({str(tiny_bundle)!r}, device='auto')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout == ""


# ---- the default location -----------------------------------------------------------------------


def test_default_model_path_env(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_MODEL, raising=False)
    assert default_model_path() == REPO / "data" / "electra_models" / "default"
    monkeypatch.setenv(ENV_MODEL, str(tmp_path))
    assert default_model_path() == tmp_path


def test_no_default_bundle(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_MODEL, str(tmp_path / "absent"))
    with pytest.raises(CorrectorError, match="no model bundle") as info:
        Corrector.load(device="cpu")
    assert str(tmp_path / "absent") in str(info.value)


def test_default_bundle_from_env(monkeypatch, tiny_bundle):
    monkeypatch.setenv(ENV_MODEL, str(tiny_bundle))
    assert Corrector.load(device="cpu").name == "tiny"


# ---- int8 graphs for CPU ------------------------------------------------------------------------


def test_export_writes_int8_copies_and_measures_their_drift(tiny_bundle):
    m = manifest_of(tiny_bundle)
    assert {"onnx/discriminator.int8.onnx", "onnx/generator.int8.onnx"} <= set(m["files"])
    drift = m["onnx"]["int8_vs_fp32"]
    assert 0.0 <= drift["discriminator_max_prob_diff"] <= 1.0
    assert 0.0 <= drift["generator_top1_agreement"] <= 1.0
    assert m["cpu_onnx"] == "fp32"
    assert (tiny_bundle / "onnx/generator.int8.onnx").stat().st_size < (tiny_bundle / "onnx/generator.onnx").stat().st_size


def test_precision_picks_the_cpu_graphs(bundle_copy):
    assert Corrector.load(bundle_copy, device="cpu").networks.precision == "fp32"  # manifest says fp32
    fix = Corrector.load(bundle_copy, device="cpu", precision="int8")
    assert fix.networks.precision == "int8" and fix.networks.files["discriminator"].name == "discriminator.int8.onnx"
    text = "今天天汽很好，hello！"
    assert len(fix.correct(text).target) == len(text)
    m = manifest_of(bundle_copy)
    m["cpu_onnx"] = "int8"
    write_manifest(bundle_copy, m)
    assert Corrector.load(bundle_copy, device="cpu").networks.precision == "int8"
    assert Corrector.load(bundle_copy, device="cpu", precision="fp32").networks.precision == "fp32"


def test_int8_requested_but_absent(bundle_copy):
    for name in ("discriminator", "generator"):
        (bundle_copy / f"onnx/{name}.int8.onnx").unlink()
    m = manifest_of(bundle_copy)
    m["files"] = [f for f in m["files"] if ".int8." not in f]
    write_manifest(bundle_copy, m)
    assert Corrector.load(bundle_copy, device="cpu").networks.precision == "fp32"
    assert "no int8 ONNX" in load_error(bundle_copy, precision="int8")
    m["cpu_onnx"] = "int8"  # a manifest recommending graphs it does not carry
    write_manifest(bundle_copy, m)
    assert "missing onnx/discriminator.int8.onnx" in load_error(bundle_copy)


def test_bad_precision_values(bundle_copy):
    assert "precision must be one of" in load_error(bundle_copy, precision="int4")
    m = manifest_of(bundle_copy)
    m["cpu_onnx"] = "bf16"
    write_manifest(bundle_copy, m)
    assert "cpu_onnx" in load_error(bundle_copy)


# ---- the committed default bundle -----------------------------------------------------------------


def test_default_bundle_corrects_the_readme_example_and_stays_small():
    bundle = REPO / "data" / "electra_models" / "default"
    fix = Corrector.load(bundle, device="cpu")
    assert fix.correct("我门一起去吃饭吧。").target == "我们一起去吃饭吧。"  # the README's quick start
    assert fix.correct("我们明天在公园见面，不见不散。").edits == []
    assert fix.networks.precision == fix.bundle.manifest.cpu_onnx == "int8"
    assert sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) <= 160e6  # the issue-10 budget: networks, LM, candidates, ranker
