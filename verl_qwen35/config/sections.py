"""The sections the preflight, the plan and verl read must be sections: `trainer=null` or
`megatron.override_transformer_config=null` is answered here, before anything reads inside them.

Values inside the sections (types, null numbers) are the value checks' job; this only
checks that each container is still a mapping.
"""

SECTIONS = (
    "data",
    "trainer",
    "algorithm",
    "actor_rollout_ref",
    "actor_rollout_ref.model",
    "actor_rollout_ref.actor",
    "actor_rollout_ref.actor.megatron",
    "actor_rollout_ref.actor.optim",
    "actor_rollout_ref.ref",
    "actor_rollout_ref.ref.megatron",
    "actor_rollout_ref.rollout",
    "megatron",
    "megatron.override_transformer_config",
    "model",
    "parallel",
    "hardware",
    "env",
    "launch_checks",
    "plan",
    "ray_kwargs",
    "ray_kwargs.ray_init",
    "ray_kwargs.ray_init.runtime_env",
)
# Sections only some verl versions have (trainer.v1: verl 0.9); null there is refused, absence is not.
WHEN_PRESENT = ("trainer.v1",)
TOP_LEVEL = tuple(s for s in SECTIONS if "." not in s)
