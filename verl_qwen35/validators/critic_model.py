"""The critic's model as verl builds it at start-up, on a machine without the critic's model files.

`validate_config` builds the critic's config when the run has a critic (`verl/utils/config.py:189`), and its
`HFModelConfig` reads config.json and the tokenizer from `critic.model.path` (`verl/workers/config/model.py:86-121`).
Those files are the cluster's: here the critic's own checks (`CriticConfig.validate`: batch sizes, micro-batches)
run on a config.json made from the preset's facts, without a tokenizer, as the bridge's values do
(validators/bridge.py). Only a path that is not a directory here is replaced; one that is gets verl's own load.
"""

import copy
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from omegaconf import DictConfig, OmegaConf, open_dict

from verl_qwen35.checks.algorithm import needs_critic
from verl_qwen35.checks.problem import Problem, warning
from verl_qwen35.validators.bridge import hf_config

PATHS = ("path", "hf_config_path", "tokenizer_path")
ARCHITECTURE = "Qwen3_5MoeForConditionalGeneration"  # Qwen/Qwen3.5-*-A*B config.json's `architectures`


def _here(path: object) -> bool:
    return path is None or os.path.isdir(os.path.expanduser(str(path)))


@contextmanager
def critic_judged_here(cfg: DictConfig) -> Iterator[tuple[DictConfig, list[Problem]]]:
    """`cfg`, or a copy whose critic reads a stand-in config.json while the block runs; with a warning when the
    critic's model is not the actor's (its own config.json, which this machine lacks, was not read)."""
    model = OmegaConf.select(cfg, "critic.model")
    if not needs_critic(cfg) or not OmegaConf.is_dict(model) or all(_here(model.get(k)) for k in PATHS):
        yield cfg, []
        return
    path = model.get("path")
    found = []
    if str(path) != str(cfg.actor_rollout_ref.model.path):
        found.append(
            warning(
                "critic.model.path",
                f"={path!r} is not on this machine: verl loads its config.json and tokenizer when it builds the critic "
                "(verl/workers/config/model.py:86-121); the critic's checks ran on a config.json of "
                f"{cfg.model.name} instead [machine check: an error at launch if it is missing there]",
            )
        )
    with tempfile.TemporaryDirectory(prefix="verl_qwen35_critic_") as stand_in:
        config = hf_config(cfg.model)
        config.architectures = [ARCHITECTURE]  # HFModelConfig asserts one (verl/workers/config/model.py)
        config.save_pretrained(stand_in)
        judged = copy.deepcopy(cfg)
        OmegaConf.set_readonly(judged, False)
        with open_dict(judged.critic.model):  # `load_tokenizer` is HFModelConfig's field, absent from verl's YAML
            judged.critic.model.path = stand_in
            judged.critic.model.hf_config_path = None
            judged.critic.model.tokenizer_path = None
            judged.critic.model.load_tokenizer = False
        yield judged, found
