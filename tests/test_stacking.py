"""training.networks.stacking: a deeper network of the same width starts from a shallower one, layer i from i mod n."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")


def test_stack_layers_by_hand():
    from training.networks.stacking import depth, stack_layers

    a, b, e = torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([9.0])
    state = {"electra.encoder.layer.0.w": a, "electra.encoder.layer.1.w": b, "electra.embeddings.x": e}
    four = stack_layers(state, 4)
    assert depth(state) == 2 and depth(four) == 4
    assert [float(four[f"electra.encoder.layer.{i}.w"]) for i in range(4)] == [1.0, 2.0, 1.0, 2.0]
    assert four["electra.embeddings.x"] is e
    assert [float(stack_layers(state, 3)[f"electra.encoder.layer.{i}.w"]) for i in range(3)] == [1.0, 2.0, 1.0]
    assert stack_layers(state, 2) == state
    four["electra.encoder.layer.2.w"] += 1  # copies, not views of the source
    assert float(a) == 1.0
    with pytest.raises(ValueError, match="cannot stack 2 encoder layers into 1"):
        stack_layers(state, 1)


def pair(tmp_path: Path, name: str = "debug") -> Path:
    from training.networks.loop import save_pair
    from training.networks.modeling import build_models, get_config

    torch.manual_seed(0)
    gen, disc = build_models(get_config(name))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n", encoding="utf-8")
    save_pair(gen, disc, tmp_path / "pair", vocab)
    return tmp_path / "pair"


def test_a_deeper_shape_starts_from_the_pair_stacked(tmp_path):
    from transformers import ElectraForPreTraining

    from training.networks.modeling import get_config
    from training.networks.pretrain import ElectraPretrainer
    from training.networks.pretrain_init import load_init_pair

    src = pair(tmp_path)
    model = ElectraPretrainer(get_config("debug-deep"), rtd_weight=50.0)
    info = load_init_pair(model, src, stack=True)
    assert info["stacked"] == {"discriminator": "2 -> 4 layers (layer i from layer i mod 2)",
                               "generator": "2 -> 4 layers (layer i from layer i mod 2)"}
    trained = ElectraForPreTraining.from_pretrained(src / "discriminator").state_dict()
    got = model.disc.state_dict()
    for i in range(4):
        key = "electra.encoder.layer.{}.attention.self.query.weight"
        assert torch.equal(got[key.format(i)], trained[key.format(i % 2)])
    assert torch.equal(got["electra.embeddings.word_embeddings.weight"],
                       trained["electra.embeddings.word_embeddings.weight"])
    assert model.gen.electra.embeddings is model.disc.electra.embeddings  # still one embedding module
    with pytest.raises(SystemExit, match="not a pair of this --config's shape"):
        load_init_pair(ElectraPretrainer(get_config("debug-deep"), rtd_weight=50.0), src)  # without stack


def test_a_generator_of_another_width_starts_new(tmp_path):
    from training.networks.modeling import get_config
    from training.networks.pretrain import ElectraPretrainer
    from training.networks.pretrain_init import load_init_pair

    src = pair(tmp_path)  # its generator is 32 wide
    model = ElectraPretrainer(get_config("debug-deep", generator_hidden_fraction=0.25), rtd_weight=50.0)
    info = load_init_pair(model, src, stack=True)
    assert info["stacked"]["generator"] == "new: the pair's is 32 wide, this shape's 16"
    assert info["stacked"]["discriminator"].startswith("2 -> 4 layers")
    with pytest.raises(SystemExit, match="or a shallower one of its width"):  # another width: nothing to stack
        load_init_pair(ElectraPretrainer(get_config("debug-deep", hidden_size=128), rtd_weight=50.0), src, stack=True)


def test_the_shards_must_share_the_pairs_vocabulary(tmp_path):
    from training.networks.modeling import get_config
    from training.networks.pretrain import ElectraPretrainer
    from training.networks.pretrain_init import load_init_pair

    src = pair(tmp_path)  # its vocab.txt: [PAD]
    same = tmp_path / "same.txt"
    same.write_text("[PAD]\n", encoding="utf-8")
    load_init_pair(ElectraPretrainer(get_config("debug"), rtd_weight=50.0), src, vocab=same)
    (src / "discriminator" / "vocab.txt").write_text("[PAD]\n##ay\n##pu\n", encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text("[PAD]\n##pu\n##ay\n", encoding="utf-8")  # two pieces in the other order
    with pytest.raises(SystemExit, match=r"differ \(2 ids; id 1 is '##ay' to the pair and '##pu' to the shards\)"):
        load_init_pair(ElectraPretrainer(get_config("debug"), rtd_weight=50.0), src, vocab=other)


@pytest.mark.parametrize("config", ["cpu-g4-8", "cpu-g4-10"])
def test_each_deeper_arm_of_the_capacity_recipe_starts_from_the_committed_pair(config):
    """training/recipes/capacity.toml stacks data/pretraining (6 x 256 under a 6 x 64 generator) into its deeper
    configs: both networks, every layer from one of the pair's."""
    from training.build import load_recipe
    from training.networks.modeling import get_config
    from training.networks.pretrain import ElectraPretrainer
    from training.networks.pretrain_init import load_init_pair

    recipe = load_recipe("capacity", [f"config={config}", "stack=true"])
    args = recipe.stage("pretrain").commands[0].args
    assert args["config"] == config and args["init-stack"] is True
    root = Path(__file__).resolve().parents[1]
    layers = get_config(config).num_layers
    model = ElectraPretrainer(get_config(config), rtd_weight=50.0)
    info = load_init_pair(model, root / str(recipe.init), stack=True)
    assert info["stacked"] == {"discriminator": f"6 -> {layers} layers (layer i from layer i mod 6)",
                               "generator": f"6 -> {layers} layers (layer i from layer i mod 6)"}
    assert info["tokens_seen"] > 260_000_000  # the pair's tokens count on
