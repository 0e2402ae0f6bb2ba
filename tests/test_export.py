"""ONNX graphs agree with the torch models they came from; ``python -m training.bundle.export --hf`` round trip."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FORCE_EDITS

from corrector import Corrector
from corrector.bundle import ONNX_DISCRIMINATOR, ONNX_GENERATOR, VOCAB, sha256_file
from corrector.runtime.sessions import OnnxNetworks
from corrector.text.tokenize import build_tokenizer, encode_batch

REPO = Path(__file__).resolve().parents[1]
SENTENCES = ["今天天汽很好", "我们去公园散步吧，他已经知道自己错了！hello 未来", "中国人民银行在北京。", "", "😀 拨打电话"]
TOLERANCE = 1e-3


def export(disc: str | Path, gen: str | Path | None = None, out: str | Path | None = None,
           *flags: str) -> subprocess.CompletedProcess[str]:
    """``python -m training.bundle.export --hf DISC GEN --out OUT [flags]`` (a missing GEN/OUT makes a usage error)."""
    args = ["--hf", str(disc)] + ([str(gen)] if gen is not None else []) + (["--out", str(out)] if out else [])
    return subprocess.run([sys.executable, "-m", "training.bundle.export", *args, *flags], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)


def one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for w in words:
        assert w in lines[0]


@pytest.fixture(scope="module")
def batch(tiny_bundle):
    """Two padded rows of different lengths (neither is the length the graphs were traced with)."""
    tok = build_tokenizer(tiny_bundle / VOCAB)
    encs = encode_batch(tok, ["今天天汽很好", "我们去公园散步吧，他已经知道自己错了！hello 未来中国人民银行北京"], 64)
    width = max(len(e.ids) for e in encs)
    ids = np.zeros((len(encs), width), dtype=np.int64)
    attn = np.zeros_like(ids)
    for r, e in enumerate(encs):
        ids[r, : len(e.ids)] = e.ids
        attn[r, : len(e.ids)] = 1
    positions = np.array([[1, 3, 5, 6], [2, 9, 17, width - 2]], dtype=np.int64)
    return ids, attn, positions


@pytest.fixture(scope="module")
def torch_models(tiny_bundle):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    disc = transformers.ElectraForPreTraining.from_pretrained(tiny_bundle / "discriminator", dtype=torch.float32)
    gen = transformers.ElectraForMaskedLM.from_pretrained(tiny_bundle / "generator", dtype=torch.float32)
    return disc.eval(), gen.eval()


def torch_logits(torch_models, ids, attn, positions) -> tuple[np.ndarray, np.ndarray]:
    import torch

    disc, gen = torch_models
    with torch.no_grad():
        d = disc(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(attn)).logits.numpy()
        g = gen(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(attn)).logits.numpy()
    rows = np.arange(len(ids))[:, None]
    return d, g[rows, positions]


def test_onnx_matches_torch(tiny_bundle, torch_models, batch):
    import onnxruntime as ort

    ids, attn, positions = batch
    want_d, want_g = torch_logits(torch_models, ids, attn, positions)
    disc = ort.InferenceSession(str(tiny_bundle / ONNX_DISCRIMINATOR), providers=["CPUExecutionProvider"])
    gen = ort.InferenceSession(str(tiny_bundle / ONNX_GENERATOR), providers=["CPUExecutionProvider"])
    (got_d,) = disc.run(None, {"input_ids": ids, "attention_mask": attn})
    (got_g,) = gen.run(None, {"input_ids": ids, "attention_mask": attn, "positions": positions})
    assert got_d.shape == want_d.shape == ids.shape
    assert got_g.shape == want_g.shape == (*positions.shape, 21128)
    real = attn.astype(bool)  # padded positions are never read
    assert np.abs(got_d - want_d)[real].max() <= TOLERANCE
    assert np.abs(got_g - want_g).max() <= TOLERANCE
    assert np.ptp(want_d[real]) > 10 * TOLERANCE  # the outputs vary, so agreement means something


def test_runtime_turns_logits_into_probabilities(tiny_bundle, torch_models, batch):
    import torch

    ids, attn, positions = batch
    want_d, want_g = torch_logits(torch_models, ids, attn, positions)
    nets = OnnxNetworks({"discriminator": tiny_bundle / ONNX_DISCRIMINATOR, "generator": tiny_bundle / ONNX_GENERATOR},
                        device="cpu")
    real = attn.astype(bool)
    probs = nets.discriminate(ids, attn)
    assert np.abs(probs - torch.sigmoid(torch.from_numpy(want_d)).numpy())[real].max() <= TOLERANCE
    logprobs = nets.generate(ids, attn, positions)
    assert np.abs(logprobs - torch.log_softmax(torch.from_numpy(want_g), -1).numpy()).max() <= TOLERANCE
    assert np.allclose(np.exp(logprobs).sum(-1), 1.0, atol=1e-4)


def test_onnx_graphs_have_dynamic_axes_and_opset(tiny_bundle):
    onnx = pytest.importorskip("onnx")
    for rel, inputs in ((ONNX_DISCRIMINATOR, ["input_ids", "attention_mask"]),
                        (ONNX_GENERATOR, ["input_ids", "attention_mask", "positions"])):
        model = onnx.load(str(tiny_bundle / rel))
        assert max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= 17
        assert [i.name for i in model.graph.input] == inputs
        for inp in model.graph.input:
            dims = inp.type.tensor_type.shape.dim
            assert len(dims) == 2 and all(d.dim_param and not d.dim_value for d in dims), rel


def test_export_rejects_a_dir_without_config(tiny_bundle, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = export(tmp_path / "empty", tiny_bundle / "generator", tmp_path / "out")
    one_line_error(proc, "config.json", "empty")
    assert not (tmp_path / "out").exists()


def test_export_rejects_mismatched_vocab(tiny_bundle, tmp_path):
    gen = Path(shutil.copytree(tiny_bundle / "generator", tmp_path / "generator"))
    with open(gen / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("extra\n")
    one_line_error(export(tiny_bundle / "discriminator", gen, tmp_path / "out"), "vocab.txt", "differs")
    assert not (tmp_path / "out").exists()


def test_export_usage_error(tiny_bundle):
    proc = export(tiny_bundle / "discriminator")
    assert proc.returncode == 2 and "usage:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_export_rejects_vocab_of_wrong_size(tiny_bundle, tmp_path):
    short = "".join((tiny_bundle / VOCAB).read_text(encoding="utf-8").splitlines(keepends=True)[:200])
    for net in ("discriminator", "generator"):
        shutil.copytree(tiny_bundle / net, tmp_path / net)
        (tmp_path / net / "vocab.txt").write_text(short, encoding="utf-8")
    proc = export(tmp_path / "discriminator", tmp_path / "generator", tmp_path / "out")
    one_line_error(proc, "200 entries", "21128")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_export_round_trip(tiny_bundle, forced_corrector, tiny_corrector, tmp_path):
    out = tmp_path / "exported"
    proc = export(tiny_bundle / "discriminator", tiny_bundle / "generator", out, "--name", "mine")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [x for x in proc.stdout.splitlines() if "max abs difference" in x]
    diffs = [float(v) for v in re.findall(r"\d\.\d+e[-+]\d+", line)]
    assert len(diffs) == 2 and all(0 <= d <= TOLERANCE for d in diffs)

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "mine"
    assert manifest["onnx"]["opset"] >= 17
    assert manifest["vocab_sha256"] == sha256_file(tiny_bundle / VOCAB)
    assert manifest["provenance"]["source"]["discriminator"] == "discriminator"  # no machine paths: the last component
    assert not out.with_name(out.name + ".partial").exists()

    for original, settings in ((forced_corrector, FORCE_EDITS), (tiny_corrector, {})):
        fix = Corrector.load(out, device="cpu", **settings)
        assert fix.name == "mine"
        for a, b in zip(fix.correct_batch(SENTENCES), original.correct_batch(SENTENCES)):
            assert a.target == b.target
            assert [(e.position, e.target, e.reason) for e in a.edits] == \
                [(e.position, e.target, e.reason) for e in b.edits]
            assert [e.confidence for e in a.edits] == pytest.approx([e.confidence for e in b.edits], abs=1e-3)
    assert any(c.edits for c in forced_corrector.correct_batch(SENTENCES))


@pytest.mark.slow
def test_export_fails_cleanly_past_tolerance(tiny_bundle, tmp_path, monkeypatch, capsys):
    """An export whose ONNX disagrees with torch exits 1 with one line and leaves nothing behind."""
    pytest.importorskip("torch")
    import training.bundle.onnx_export
    from training.bundle.export import main

    monkeypatch.setattr(training.bundle.onnx_export, "TOLERANCE", -1.0)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        main(["--hf", str(tiny_bundle / "discriminator"), str(tiny_bundle / "generator"), "--out", str(out)])
    assert info.value.code == 1
    err = capsys.readouterr().err.strip("\n").split("\n")
    assert len(err) == 1 and err[0].startswith("error: ONNX output differs from torch")
    assert not out.exists() and not out.with_name("out.partial").exists()


@pytest.fixture(scope="module")
def joint_bundle(tmp_path_factory) -> Path:
    from conftest import build_tiny_bundle

    return build_tiny_bundle(tmp_path_factory.mktemp("joint") / "joint", joint=True)


def test_a_generator_on_the_discriminators_body_exports_one_graph(joint_bundle, batch):
    """Both heads come from one graph (the shared body stored once) and agree with the two torch models, loaded
    back from the bundle's Hugging Face directories as two separate networks."""
    import onnxruntime as ort
    import torch
    import transformers

    from corrector.bundle import ONNX_JOINT, Bundle

    onnx_files = sorted(p.name for p in (joint_bundle / "onnx").iterdir())
    assert onnx_files == ["joint.int8.onnx", "joint.onnx"]
    assert Bundle.load(joint_bundle).graph_names == ("joint",)
    disc = transformers.ElectraForPreTraining.from_pretrained(joint_bundle / "discriminator", dtype=torch.float32)
    gen = transformers.ElectraForMaskedLM.from_pretrained(joint_bundle / "generator", dtype=torch.float32)
    assert gen.config.hidden_size == disc.config.hidden_size
    ids, attn, positions = batch
    want_d, want_g = torch_logits((disc.eval(), gen.eval()), ids, attn, positions)
    sess = ort.InferenceSession(str(joint_bundle / ONNX_JOINT), providers=["CPUExecutionProvider"])
    assert [o.name for o in sess.get_outputs()] == ["logits", "rtd_logits"]
    got_g, got_d = sess.run(None, {"input_ids": ids, "attention_mask": attn, "positions": positions})
    real = attn.astype(bool)
    assert np.abs(got_d - want_d)[real].max() <= TOLERANCE
    assert np.abs(got_g - want_g).max() <= TOLERANCE
    assert np.ptp(want_d[real]) > 10 * TOLERANCE


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_joint_networks_match_a_pair_run_on_the_same_weights(joint_bundle, batch, precision):
    """The Corrector's runtime on the joint graph gives what the same weights give as a discriminator and a
    generator graph, in whole batches (fp32) and one unpadded row per call (int8)."""
    from corrector.bundle import Bundle
    from training.bundle.onnx_export import DiscriminatorLogits, GeneratorLogitsAt, _export

    ids, attn, positions = batch
    bundle = Bundle.load(joint_bundle)
    graphs, cpu_graphs = bundle.onnx_files(precision)
    joint = OnnxNetworks(graphs, "cpu", 0, cpu_graphs, dynamic_int8=True)
    assert joint.joint and joint.rows_alone == (precision == "int8")
    rtd, lp, _ = joint.run(ids, attn, positions)
    if precision == "fp32":
        import torch
        import transformers

        d = transformers.ElectraForPreTraining.from_pretrained(joint_bundle / "discriminator", dtype=torch.float32)
        g = transformers.ElectraForMaskedLM.from_pretrained(joint_bundle / "generator", dtype=torch.float32)
        pair_dir = joint_bundle.parent / "pair-onnx"
        pair_dir.mkdir(exist_ok=True)
        _export(DiscriminatorLogits(d.eval()), (torch.from_numpy(ids), torch.from_numpy(attn)),
                pair_dir / "discriminator.onnx", ["input_ids", "attention_mask"], ["logits"],
                {"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}, "logits": {0: "b", 1: "t"}})
        _export(GeneratorLogitsAt(g.eval()), tuple(torch.from_numpy(a) for a in batch), pair_dir / "generator.onnx",
                ["input_ids", "attention_mask", "positions"], ["logits"],
                {"input_ids": {0: "b", 1: "t"}, "attention_mask": {0: "b", 1: "t"}, "positions": {0: "b", 1: "p"},
                 "logits": {0: "b", 1: "p"}})
        pair = OnnxNetworks({"discriminator": pair_dir / "discriminator.onnx", "generator": pair_dir / "generator.onnx"},
                            device="cpu")
        want_rtd, want_lp, _ = pair.run(ids, attn, positions)
        assert np.abs(rtd - want_rtd)[attn.astype(bool)].max() <= TOLERANCE
        assert np.abs(lp.dense() - want_lp.dense()).max() <= TOLERANCE
    else:  # one row at a time: each row's outputs are what that row gives alone
        for r in range(len(ids)):
            n = int(attn[r].sum())
            one_rtd, one_lp, _ = joint.run(ids[r : r + 1, :n], attn[r : r + 1, :n], positions[r : r + 1])
            assert np.array_equal(one_rtd[0], rtd[r, :n])
            rows = slice(int(np.count_nonzero(positions[:r])), int(np.count_nonzero(positions[: r + 1])))
            assert np.array_equal(one_lp.dense(), lp.dense()[rows])
    assert lp.dense().shape == (np.count_nonzero(positions), 21128)


def test_corrector_on_a_joint_bundle(joint_bundle):
    from corrector import Corrector

    fix = Corrector.load(joint_bundle, device="cpu", threshold=0.0)
    assert fix.networks.joint and fix.networks.precision == fix.bundle.manifest.cpu_onnx
    texts = ["今天天汽很好", "", "hello 未来中国"]
    out = fix.correct_batch(texts)
    assert [r.to_dict() for r in out] == [fix.correct(t).to_dict() for t in texts]
    assert all(len(r.target) == len(t) for r, t in zip(out, texts)) and out[0].edits  # forced: edits happen


def test_a_broken_joint_bundle_is_named_in_one_line(joint_bundle, tmp_path):
    from corrector import CorrectorError

    copy = Path(shutil.copytree(joint_bundle, tmp_path / "copy"))
    (copy / "onnx/joint.int8.onnx").unlink()
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"] = [f for f in manifest["files"] if ".int8." not in f]
    manifest["cpu_onnx"] = "int8"  # recommends the int8 copy it no longer carries
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(CorrectorError, match="missing onnx/joint.int8.onnx"):
        Corrector.load(copy, device="cpu")
    manifest["cpu_onnx"] = "fp32"
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (copy / "onnx/joint.onnx").write_bytes(b"garbage")
    with pytest.raises(CorrectorError, match="corrupt or unreadable ONNX model .*joint.onnx"):
        Corrector.load(copy, device="cpu")
    (copy / "onnx/joint.onnx").unlink()  # now a pair bundle without its graphs
    with pytest.raises(CorrectorError, match="missing onnx/discriminator.onnx"):
        Corrector.load(copy, device="cpu")
    with pytest.raises(CorrectorError, match="must be discriminator and generator, joint, or body and head"):
        OnnxNetworks({"generator": joint_bundle / "onnx/joint.onnx"}, device="cpu")


@pytest.fixture(scope="module")
def split_bundle(joint_bundle, tmp_path_factory) -> Path:
    """The joint bundle with its graphs cut into body and head (``python -m training.bundle.onnx_split``)."""
    out = Path(shutil.copytree(joint_bundle, tmp_path_factory.mktemp("split") / "split"))
    proc = subprocess.run([sys.executable, "-m", "training.bundle.onnx_split", "--model", str(out)], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_a_split_bundle_holds_the_body_and_the_head(split_bundle):
    from corrector.bundle import Bundle

    assert sorted(p.name for p in (split_bundle / "onnx").iterdir()) == [
        "body.int8.onnx", "body.onnx", "head.int8.onnx", "head.onnx"]
    bundle = Bundle.load(split_bundle)
    assert bundle.graph_names == ("body", "head") and bundle.manifest.onnx["layout"] == "body+head"
    assert bundle.manifest.onnx["split_max_abs_diff_vs_joint"]["split.int8"] == 0.0
    assert not any("joint" in f for f in bundle.manifest.files)
    proc = subprocess.run([sys.executable, "-m", "training.bundle.onnx_split", "--model", str(split_bundle)],
                          capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    one_line_error(proc, "not one joint graph")


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_split_networks_give_the_joint_graphs_numbers_and_run_the_head_only_where_suspected(
        joint_bundle, split_bundle, batch, precision):
    """At every asked position the split graphs give what the joint graph gives (int8: bit for bit). With a
    floor, the head runs only at the asked positions whose P(replaced) reaches it, and there gives what the joint
    graph gives when asked at those positions alone."""
    from corrector.bundle import Bundle
    from corrector.runtime.sessions import suspected

    ids, attn, positions = batch
    nets = {}
    for name, root in (("joint", joint_bundle), ("split", split_bundle)):
        graphs, cpu_graphs = Bundle.load(root).onnx_files(precision)
        nets[name] = OnnxNetworks(graphs, "cpu", 0, cpu_graphs, dynamic_int8=True)
    assert nets["split"].split and nets["split"].rows_alone == (precision == "int8")
    same = np.array_equal if precision == "int8" else (lambda a, b: np.allclose(a, b, atol=TOLERANCE))
    rtd, lp, keep = nets["split"].run(ids, attn, positions)
    want_rtd, want_lp, _ = nets["joint"].run(ids, attn, positions)
    real = attn.astype(bool)
    assert same(rtd[real], want_rtd[real]) and same(lp.logits, want_lp.logits) and keep.sum() == len(lp)
    probs = np.take_along_axis(rtd, positions, axis=1)
    floor = np.full(positions.shape, float(np.median(probs[positions > 0])))
    floor[:, 0] = 0.0  # a floor per position: the first of each row is always asked
    rtd_f, lp_f, keep_f = nets["split"].run(ids, attn, positions, floor)
    logits = np.log(rtd) - np.log1p(-rtd)
    assert np.array_equal(keep_f, suspected(logits, positions, floor)) or precision == "fp32"
    assert np.array_equal(keep_f, (probs >= floor) & (positions > 0)) or precision == "int8"
    assert 0 < keep_f.sum() < keep.sum() and keep_f[:, 0][positions[:, 0] > 0].all()
    assert same(rtd_f[real], rtd[real])
    kept = np.zeros_like(positions)
    for r in range(len(positions)):
        kept[r, : keep_f[r].sum()] = positions[r][keep_f[r]]
    _, want_kept, _ = nets["joint"].run(ids, attn, kept)
    assert same(lp_f.logits, want_kept.logits)
    for name in ("joint", "split"):  # graphs that ran the head everywhere give the same answer for the floor
        assert np.array_equal(nets[name].run(ids, attn, positions, floor)[2], keep_f) or precision == "fp32"


def test_corrector_on_a_split_bundle_matches_the_joint_one(joint_bundle, split_bundle):
    """rtd_floor 0 (the library default): every site looked at, the same corrections as the joint graph (int8
    graphs: the same numbers)."""
    texts = ["今天天汽很好", "", "hello 未来中国", "我们去公园散步吧，他已经知道自己错了！"]
    joint = Corrector.load(joint_bundle, device="cpu", threshold=0.0, precision="int8")
    split = Corrector.load(split_bundle, device="cpu", threshold=0.0, precision="int8")
    assert split.networks.split and split.networks.precision == "int8"
    assert [c.to_dict() for c in split.correct_batch(texts)] == [c.to_dict() for c in joint.correct_batch(texts)]
    every = split.explain(texts[3], rtd_floor=1.0)  # nothing reaches P(replaced) 1: no site, no edit
    assert not every.correction.edits
    cjk = [c for c in every.chars if "\u4e00" <= c.char <= "\u9fff"]
    assert cjk and all(c.decision.startswith("kept: unsuspected") and c.candidates == [] for c in cjk)


def test_update_takes_decoding_settings_from_a_file_or_another_bundle(tiny_bundle, tmp_path):
    """--defaults FILE embeds that JSON's settings; --defaults BUNDLE the settings that bundle's manifest holds."""
    pytest.importorskip("torch")
    from training.bundle import export

    def settings(bundle: Path) -> dict:
        return json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["corrector_defaults"]

    donor = Path(shutil.copytree(tiny_bundle, tmp_path / "donor"))
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"rtd_floor": 0.002, "protect_foreign_names": 0.01}), encoding="utf-8")
    export.main(["--update", str(donor), "--defaults", str(mine)])
    assert settings(donor) == {"rtd_floor": 0.002, "protect_foreign_names": 0.01}
    taker = Path(shutil.copytree(tiny_bundle, tmp_path / "taker"))
    assert settings(taker) != settings(donor)
    export.main(["--update", str(taker), "--defaults", str(donor)])
    assert settings(taker) == settings(donor)
