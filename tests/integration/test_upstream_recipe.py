"""verl main's own Qwen3.5-35B NPU recipe (verl PR #7372) as a user's preset: accepted on NPU, where MindSpeed
runs Gated DeltaNet on packed sequences; the same packing is refused on GPU before megatron-core 0.18.

The recipe is `tests/seed_fidelity/upstream_overrides/35b_npu.txt` (a copy of shared/reference/upstream_overrides/,
recorded from examples/grpo_trainer/run_qwen3_5_35b_megatron.sh at verl main 1dda039b). Every override becomes a
key of one preset file under `--config-dir`, later lines winning as in Hydra, with one translation: the actor's
Megatron patch keys are written as this project's `megatron.*`, which feeds actor and ref alike. verl's own
ref follows the actor there (`ref.megatron.use_remove_padding: ${oc.select:...actor.megatron.use_remove_padding}`
in verl's trainer config), so the recipe means both sides.
"""

import json
import re
from pathlib import Path

import pytest
import yaml

from verl_qwen35.installed import installed_mcore, installed_verl_schema

# On every verl CI tests (-m each_verl): verl main's recipe on the installed verl's schema.
pytestmark = pytest.mark.each_verl

RECIPE = Path(__file__).parents[1] / "seed_fidelity" / "upstream_overrides" / "35b_npu.txt"
ACTOR_MEGATRON = "actor_rollout_ref.actor.megatron."
# What conf/config.yaml's `megatron` node feeds to both sides (the rest of actor.megatron is layout or verl's).
PATCH = (
    "use_mbridge",
    "vanilla_mbridge",
    "use_remove_padding",
    "dtype",
    "param_offload",
    "optimizer_offload",
    "override_transformer_config",
)
# The 35B text_config facts the model-path check compares (shared/reference/README.md table).
CONFIG_JSON = {
    "text_config": {
        "num_hidden_layers": 40,
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 512,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
    }
}


def recipe_overrides() -> list[tuple[str, object]]:
    text = RECIPE.read_text().partition("\n#ENV\n")[0]
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, value = line.split("=", 1)
        key = key.lstrip("+")
        if key.endswith(".grad_offload") and installed_verl_schema() == "v0_9":
            continue  # verl 0.9.1 removed the key (its param_offload also releases gradients)
        if key.startswith(ACTOR_MEGATRON) and key.removeprefix(ACTOR_MEGATRON).split(".")[0] in PATCH:
            key = "megatron." + key.removeprefix(ACTOR_MEGATRON)
        found.append((key, yaml.safe_load(value)))
    return found


def write_preset(conf: Path, extra: list[tuple[str, object]] = ()) -> str:
    """conf/tuning/upstream_35b_npu.yaml holding every override; returns the `tuning=` choice."""
    tree: dict = {}
    for key, value in [*recipe_overrides(), *extra]:
        node = tree
        *parents, leaf = key.split(".")
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    path = conf / "tuning" / "upstream_35b_npu.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# @package _global_\n" + yaml.safe_dump(tree, sort_keys=False))
    return "tuning=upstream_35b_npu"


def test_the_recipe_really_runs_packed_sequences_with_dynamic_batches():
    """Guards the premise: the recorded recipe is the packed one (a later re-recording must keep it)."""
    found = dict(recipe_overrides())
    assert found["megatron.use_remove_padding"] is True and found["actor_rollout_ref.model.use_remove_padding"] is True
    assert found["actor_rollout_ref.actor.use_dynamic_bsz"] is True


@pytest.mark.parametrize("gdn", [[], [("megatron.override_transformer_config.use_ascend_gdn", True)]])
def test_the_npu_recipe_passes_the_dry_run(cli, tmp_path, gdn):
    """Also with the MindSpeed-Bridge stack's keys the script sets when USE_MINDSPEED_BRIDGE=True."""
    bridge = [("megatron.override_transformer_config.use_triton_gdn", False)] if gdn else []
    choice = write_preset(tmp_path / "my_conf", gdn + bridge)
    said = cli("--config-dir", str(tmp_path / "my_conf"), "device=npu", "model=35b", choice, "dry_run=true")
    assert said.code == 0, said.said
    assert "verdict    OK" in said.out and "ERROR" not in said.said
    rules = r"^rules      verl \S+ \(installed\), megatron-core .*MindSpeed, NPU.*, vLLM "
    assert re.search(rules, said.out, re.M), said.out


def test_the_npu_recipe_passes_the_full_dry_run(cli, tmp_path):
    """dry_run=full: verl's own validate_config and dataclasses, megatron-core's TransformerConfig (MindSpeed
    keys set aside on NPU), the real files; the recipe's relative model path is a directory here."""
    from tests.tiny_data import write_geo3k_stub

    data = write_geo3k_stub(tmp_path / "data")
    weights = tmp_path / "Qwen3.5-35B-A3B"
    weights.mkdir()
    (weights / "config.json").write_text(json.dumps(CONFIG_JSON))
    choice = write_preset(tmp_path / "my_conf")
    said = cli("--config-dir", str(tmp_path / "my_conf"), "device=npu", "model=35b", choice, "dry_run=full", *data)
    assert said.code == 0, said.said
    assert "verl       validate_config and actor/ref/rollout dataclasses: OK" in said.out
    assert "verdict    OK" in said.out


@pytest.mark.skipif((installed_mcore() or (0, 16)) >= (0, 18), reason="megatron-core >= 0.18 has packed GDN on GPU")
def test_the_same_packing_on_gpu_before_megatron_core_0_18_is_refused_naming_the_key(cli):
    said = cli(
        "device=gpu",
        "model=35b",
        "dry_run=true",
        "megatron.use_remove_padding=true",
        "actor_rollout_ref.actor.use_dynamic_bsz=true",
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true",
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true",
    )
    assert said.code == 2, said.said
    (packed,) = [line for line in said.err.splitlines() if "packed sequences" in line and "ERROR" in line]
    assert "[megatron.use_remove_padding" in packed and "before megatron-core 0.18" in packed
    rules = r"^rules      verl \S+ \(installed\), megatron-core 0\.1[67] \((installed; )?stock, GPU"
    assert re.search(rules, said.err, re.M)
    assert "Traceback" not in said.said
