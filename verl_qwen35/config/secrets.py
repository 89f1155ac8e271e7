"""Find secrets wherever a command line or a config could carry them, before anything is written.

Hydra writes `.hydra/overrides.yaml` and `.hydra/config.yaml` before the job runs, so the
overrides are scanned before Hydra starts; the composed config is scanned again (for values
that came from --config-dir files or interpolations) before a plan, verdict or launch.yaml.
A finding names the key and the variable, never the value.
"""

import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from hydra.core.override_parser.types import Override
from omegaconf import DictConfig, OmegaConf

from verl_qwen35.errors import UserError

# A name is split into words (`_`, `-`, `.`, camelCase); it looks secret when a word is one of
# these or ends in one of the long ones (HFTOKEN), unless its last word says it holds a path
# (HF_TOKEN_PATH, SSH_KEY_FILE, CREDENTIALS_DIR). TOKENIZERS_PARALLELISM has no such word.
SECRET_WORDS = frozenset(
    [
        "KEY",
        "KEYS",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASS",
        "PAT",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CRED",
        "CREDS",
        "AUTH",
        "AUTHTOKEN",
        "PRIVATEKEY",
        "COOKIE",
        "AUTHORIZATION",
        "BEARER",
        "DSN",
    ]
)
SECRET_SUFFIXES = ("APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS")
PATH_WORDS = frozenset(["PATH", "FILE", "FILES", "DIR", "DIRS", "DIRECTORY", "FOLDER"])
# A last word that makes the name a setting about a secret, not the secret (RAY_AUTH_MODE, SSH_AUTH_SOCK).
SETTING_WORDS = frozenset(["MODE", "TYPE", "METHOD", "ENABLE", "ENABLED", "DISABLE", "DISABLED", "SOCK", "TIMEOUT"])
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: str) -> list[str]:
    """`wandbApiKey` -> WANDB API KEY; `HF_TOKEN_PATH` -> HF TOKEN PATH."""
    return [w.upper() for w in _WORD.findall(name)]


@lru_cache(maxsize=4096)  # asked for every env name and string value of every config
def looks_secret(name: str) -> bool:
    """True for WANDB_API_KEY, HF_TOKEN, db_password, GITHUB_PAT, apiKey; False for HF_TOKEN_PATH, *_FILE, *_DIR."""
    words = name_words(name)
    if not words or words[-1] in PATH_WORDS or words[-1] in SETTING_WORDS:
        return False
    return any(w in SECRET_WORDS or (len(w) > 6 and w.endswith(SECRET_SUFFIXES)) for w in words)


# Values that are credentials whatever their variable or key is called. Vendors' token formats
# (GitHub's "Behind GitHub's new authentication token formats", Hugging Face's `hf_`, OpenAI's `sk-`,
# GitLab's `glpat-`, Slack's `xox?-`, AWS access key ids, Google API keys), long enough that a
# config word (`hf_model`, `sk-learn`) never matches.
TOKEN_PATTERN = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})"
)
# Every pattern here runs in time linear in the value's length (a 1 MB value in a preset is scanned in well
# under a second): a repetition that could start at every position of a long run is bounded (a URL scheme is
# at most 32 characters, RFC 3986 names none longer) or anchored by a lookbehind to the start of a word.
# scheme://user:password@host: the password is a secret whatever the key is called (submit.address).
_SCHEME = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://"
_URL_PASSWORD = re.compile(rf"({_SCHEME}[^/\s:@]+:)([^/\s@]+)(@)")
# scheme://TOKEN@host (git's `https://ghp_...@github.com`): a user name that is a token, by a vendor's
# prefix or by its shape (20+ letters and digits mixed); `git@`, `user@`, `oauth2@` are user names.
_URL_USER = re.compile(rf"({_SCHEME})([^/\s:@]+)(@)")
# ?access_token=..., &api_key=...: a query parameter whose name looks secret carries a credential in a URL
# (an endpoint exported in the shell reaches launch.yaml as the same value typed in the config would).
_QUERY_SECRET = re.compile(r"([?&;]([A-Za-z][A-Za-z0-9_.-]{0,63})=)([^&#\s;]+)")
_TOKEN_PREFIX = re.compile(r"^(?:gh[pousr]_|github_pat_|hf_|sk-|glpat-|xox[abprs]-|AKIA|AIza)[A-Za-z0-9_-]{3,}$")


def _token_user(user: str) -> bool:
    """A URL user name that is a token: a vendor's prefix, or the shape of one (20+ characters of one word,
    upper and lower case and digits mixed, or 32+ hex digits); `service-account-2024` is a name."""
    if _TOKEN_PREFIX.match(user):
        return True
    if len(user) < 20 or not re.fullmatch(r"[A-Za-z0-9_]+", user):
        return False
    mixed = any(c.isupper() for c in user) and any(c.islower() for c in user) and any(c.isdigit() for c in user)
    return mixed or (len(user) >= 32 and re.fullmatch(r"[0-9a-fA-F]+", user) is not None)


def credentials_in(value: str) -> str | None:
    """What kind of credential a value holds (a URL password, a token as URL user name, a vendor's
    token), or None. Never the credential itself."""
    if _URL_PASSWORD.search(value):
        return "a URL with a password (user:password@host)"
    if any(_token_user(m.group(2)) for m in _URL_USER.finditer(value)):
        return "a URL whose user name is a token (https://TOKEN@host)"
    if TOKEN_PATTERN.search(value):
        return "what looks like an access token (a vendor's token format)"
    if any(_query_secret(m) for m in _QUERY_SECRET.finditer(value)):
        return "a URL with a secret query parameter (?access_token=...)"
    return None


def _query_secret(match: re.Match[str]) -> bool:
    return looks_secret(match.group(2)) or config_key_looks_secret(match.group(2))


def shell_secrets(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The launching shell's secrets: secret-looking variables whose value looks like a secret too
    (10+ characters, not a plain word: `RAY_AUTH_MODE=disabled` would otherwise match every
    `disabled`), and any variable whose value holds credentials (`HTTPS_PROXY=http://u:p@proxy`)."""
    return {
        name: value
        for name, value in environ.items()
        if (looks_secret(name) and len(value) >= 10 and not value.isalpha() and " " not in value)
        or credentials_in(value)
    }


# Mappings whose keys are environment variable names (ours, Ray's runtime_env, Hydra's own env_set).
ENV_CONTAINERS = ("env.set", "env_vars", "env_set")
# A config key (not a variable name) holds a secret when it ends like these: `wandb_api_key`,
# `hf_token`, `password`; `ppo_max_token_len_per_gpu` and `prompt_key` do not.
_KEY_ENDINGS = ("API KEY", "ACCESS KEY", "SECRET KEY", "PRIVATE KEY", "AUTH KEY")
_KEY_LAST_WORDS = frozenset(SECRET_SUFFIXES) | {"PASS", "PAT", "AUTH", "APIKEY"}
# NAME=value inside a string: a shell line (`export HF_TOKEN=...`, submit.setup), an sbatch option
# (`--export=ALL,NAME=value`), a command (`env NAME=value python`). Zero-width, so `--env=API_KEY=x`
# yields both `env` and `API_KEY`; `NAME=$NAME` refers to the shell's value and is fine.
# Only the value's first character is looked at (`$NAME` or nothing): a whole value would be rescanned from each
# `=` of `a=a=a=...`, quadratic in its length.
_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_])(?=([A-Za-z_][A-Za-z0-9_]*)=([^\s,;'\"]?))")
_ENV_READ = re.compile(r"\$\{\s*(?:oc\.env|env)\s*:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")
# `${oc.env:${some.key}}`: the variable's name is itself computed, so no check can tell whether it is a secret.
_ENV_READ_COMPUTED = re.compile(r"\$\{\s*(?:oc\.env|env)\s*:\s*['\"]?\$\{")
ADVICE = (
    "export it in the shell of every node before `ray start` (Ray workers inherit it there) and keep it "
    "out of the command line and the config, which are printed and saved with every run"
)


@lru_cache(maxsize=4096)  # a config has ~1,500 keys, the same in every sweep job
def config_key_looks_secret(key: str) -> bool:
    words = name_words(key)
    return bool(words) and (words[-1] in _KEY_LAST_WORDS or " ".join(words[-2:]) in _KEY_ENDINGS)


def _is_env_container(path: str) -> bool:
    """True when the mapping at `path` holds environment variables (its keys are variable names)."""
    return any(path == c or path.endswith(f".{c}") for c in ENV_CONTAINERS)


def _in_env_container(path: str) -> bool:
    return _is_env_container(path.rsplit(".", 1)[0] if "." in path else "")


def findings(path: str, value: Any, shell: Mapping[str, str], in_env: bool | None = None) -> Iterator[tuple[str, str]]:
    """(key, why) for every secret under `path`; `value` is a plain value, dict or list.

    `in_env` says whether `path` is a variable of an env mapping; callers leave it out (it is
    worked out from `path`), the walk passes it down so a config is not re-parsed per leaf.
    """
    if in_env is None:
        in_env = _in_env_container(path)
    if isinstance(value, Mapping):
        children_in_env = _is_env_container(path)
        for key, child in value.items():
            yield from findings(f"{path}.{key}" if path else str(key), child, shell, children_in_env)
        return
    if isinstance(value, list | tuple):
        for child in value:
            yield from findings(path, child, shell, in_env)
        return
    name = path.rsplit(".", 1)[-1]
    if in_env and looks_secret(name):
        yield path, f"{name} looks like a secret variable"
    elif isinstance(value, str) and value and config_key_looks_secret(name) and not _ENV_READ.search(value):
        yield path, f"{name} looks like a key for a secret"
    if isinstance(value, str):
        for var, assigned in _ASSIGNMENT.findall(value):
            if assigned and not assigned.startswith("$") and looks_secret(var):
                yield path, f"sets the secret-looking variable {var} to a value"
        if kind := credentials_in(value):
            yield path, f"holds {kind}"
        if _ENV_READ_COMPUTED.search(value):
            yield (
                path,
                "reads an environment variable named by an interpolation (${oc.env:${...}}), which no check can vet",
            )
        for read in _ENV_READ.findall(value):
            if looks_secret(read):
                yield path, f"reads the secret-looking variable {read} (its value would be written resolved)"
        for var, secret in shell.items():
            if secret in value:
                yield path, f"holds the value of your shell's {var}"


def override_value(override: Override) -> Any:
    """An override's value as the scan reads it: a sweep's values as a list."""
    if override.is_sweep_override():
        return [v for v in override.sweep_iterator()]
    return override.value()


def check_overrides(overrides: Sequence[Override]) -> None:
    """Refuse, before Hydra writes `.hydra/`, an override that puts a secret into the config."""
    shell = shell_secrets()
    for override in overrides:
        if override.is_delete():
            continue
        key = override.key_or_group if override.package is None else f"{override.key_or_group}@{override.package}"
        for where, why in findings(key, override_value(override), shell):
            raise UserError(f"{where}: {why}; refused before anything was written. Instead, {ADVICE}.")


def config_findings(cfg: DictConfig, leave_out: Collection[str] = ()) -> list[tuple[str, str]]:
    """Secrets in a composed config (resolved where it can be; env reads are looked at unresolved); the
    top-level keys in `leave_out` (Hydra's own `hydra` node) are not scanned, and not copied either."""
    shell = shell_secrets()
    raw = OmegaConf.to_container(cfg, resolve=False)
    return list(findings("", {k: v for k, v in raw.items() if k not in leave_out}, shell))


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """Anything printed or saved, with the values of the shell's secrets masked, and any URL password,
    token used as a URL user name or vendor's token (from wherever it came) too."""
    for name, value in (shell_secrets() if environ is None else shell_secrets(environ)).items():
        text = text.replace(value, f"<{name} redacted>")
    text = _URL_PASSWORD.sub(r"\1<redacted>\3", text)
    text = _URL_USER.sub(lambda m: f"{m.group(1)}<redacted>@" if _token_user(m.group(2)) else m.group(0), text)
    text = _QUERY_SECRET.sub(lambda m: f"{m.group(1)}<redacted>" if _query_secret(m) else m.group(0), text)
    return TOKEN_PATTERN.sub("<redacted>", text)


# A printed config's `key: value` line (OmegaConf.to_yaml's block style).
_YAML_LINE = re.compile(r"^([ \t]*(?:- )?)([^\s:#][^:\n]*?):( +)(\S.*)$", re.MULTILINE)


def redact_config_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    """A printed config (Hydra's `--cfg`, `--info`): `redact`, and the value of every key that looks like
    it holds a secret (`password: ...`, `HF_TOKEN: ...`) masked; interpolations are shown as written."""

    def masked(line: re.Match[str]) -> str:
        key, value = line.group(2).strip("'\""), line.group(4)
        secret_key = config_key_looks_secret(key) or (key.isupper() and looks_secret(key))
        if not secret_key or value.startswith(("${", "'${", "null", "''", '""')):
            return line.group(0)
        return f"{line.group(1)}{line.group(2)}:{line.group(3)}<redacted>"

    return _YAML_LINE.sub(masked, redact(text, environ))
