"""The `env` node: what the launch can export (names to scalar values) and clear (a list of names)."""

from omegaconf import DictConfig, OmegaConf


def env_problems(cfg: DictConfig) -> list[tuple[str, str]]:
    """(key, why) when `env` is not what apply_env can export: names to scalar values, a list of names to clear."""
    env = cfg.get("env")
    if not OmegaConf.is_dict(env):
        return [("env", f"env={env!r}: env holds `set` (NAME: value) and `unset` (a list of names)")]
    found = []
    values = env.get("set")
    if not OmegaConf.is_dict(values):
        found.append(("env.set", f"env.set={values!r}: a mapping NAME: value; drop one variable with ~env.set.NAME"))
    else:
        found += [
            (f"env.set.{name}", f"env.set.{name}={value!r}: an environment variable needs a text or number value")
            for name, value in values.items()
            if value is None or OmegaConf.is_config(value)
        ]
    unset = env.get("unset")
    if not OmegaConf.is_list(unset) or any(OmegaConf.is_config(n) or n is None for n in unset):
        found.append(("env.unset", f"env.unset={unset!r}: a list of variable names, e.g. [http_proxy, https_proxy]"))
    return found
