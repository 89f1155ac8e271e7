"""The vision tower the estimate counts is the one transformers builds for Qwen3.5 (counted on the meta device)."""

import json

import pytest
import torch
from omegaconf import OmegaConf

from verl_qwen35.config import compose
from verl_qwen35.model.memory import ModelFacts

vision = pytest.importorskip("transformers.models.qwen3_5_moe.modeling_qwen3_5_moe", reason="transformers < 5")


@pytest.mark.parametrize("model", ["35b", "122b", "397b"])
def test_the_vision_tower_counts_what_transformers_builds(model):
    cfg = compose([f"model={model}", "device=gpu"])
    OmegaConf.resolve(cfg)
    # The vision config as the estimate reads it from model.*; its output width is the text hidden size.
    config = vision.Qwen3_5MoeVisionConfig(
        depth=cfg.model.vision_depth,
        hidden_size=cfg.model.vision_hidden_size,
        intermediate_size=cfg.model.vision_intermediate_size,
        patch_size=cfg.model.vision_patch_size,
        temporal_patch_size=cfg.model.vision_temporal_patch_size,
        spatial_merge_size=cfg.model.vision_spatial_merge_size,
        num_position_embeddings=cfg.model.vision_num_position_embeddings,
        out_hidden_size=cfg.model.hidden_size,
    )
    with torch.device("meta"):
        tower = vision.Qwen3_5MoeVisionModel(config)
    real = sum(p.numel() for p in tower.parameters())
    assert ModelFacts.of(cfg.model).vision_params == real
    assert 0.4e9 < real < 0.5e9  # the ~0.45B the issue names


def test_a_text_only_model_has_no_vision_tower_in_training_or_vllm(cli):
    with_tower = cli("estimate", "model=35b", "device=gpu", "--json")
    text_only = cli("estimate", "model=35b", "device=gpu", "model.vision_depth=0", "--json")
    a, b = json.loads(with_tower.out), json.loads(text_only.out)
    assert b["vision_params"] == 0 and a["vision_params"] > 0
    assert a["params_per_rank"] > b["params_per_rank"] and a["rollout_params_per_rank"] > b["rollout_params_per_rank"]
    assert a["params_total"] == b["params_total"]  # the published totals count the text model
