"""vLLM's sampling and engine rules on what verl hands it, by vLLM release (checks/vllm.py), and the shipped
`vllm serve` argument lists against the installed verl's own launch code."""

import ast
from pathlib import Path

import pytest

from tests.configs import config
from verl_qwen35.checks.vllm import (
    VllmInUse,
    engine_arguments,
    engine_problems,
    sampling_problems,
    serve_args,
    shipped_snapshots,
    verl_minor,
    vllm_problems,
)
from verl_qwen35.installed import ASSUMED_VLLM, installed_vllm, verl_config_dir

# On every verl CI tests (-m each_verl): the installed verl's own vLLM launch code.
pytestmark = pytest.mark.each_verl

R = "actor_rollout_ref.rollout"
E = f"{R}.engine_kwargs.vllm"
V024, V018 = VllmInUse((0, 24, 0), False), VllmInUse((0, 18, 0), False)
VERL_09, VERL_08 = (0, 9), (0, 8)


def refused(found) -> dict[str, str]:
    return {p.keys[0]: p.message for p in found if p.level == "error"}


# (changes, the key refused, vLLM releases that refuse it, verl versions that refuse it)
BAD = [
    ({f"{R}.temperature": -0.5}, f"{R}.temperature", (V018, V024), (VERL_08, VERL_09)),
    ({f"{R}.temperature": 2.5}, f"{R}.temperature", (V024,), (VERL_08, VERL_09)),
    ({f"{R}.top_p": 0.0}, f"{R}.top_p", (V018, V024), (VERL_08, VERL_09)),
    ({f"{R}.top_k": -2}, f"{R}.top_k", (V018, V024), (VERL_08, VERL_09)),
    ({f"{R}.val_kwargs.top_p": 1.5, "trainer.test_freq": 5}, f"{R}.val_kwargs.top_p", (V018, V024), (VERL_08, VERL_09)),
    (
        {f"{R}.val_kwargs.temperature": 3.0, "trainer.val_before_train": True},
        f"{R}.val_kwargs.temperature",
        (V024,),
        (VERL_08, VERL_09),
    ),  # fmt: skip
    ({f"{E}.max_num_sequences": 64}, f"{E}.max_num_sequences", (V018, V024), (VERL_08, VERL_09)),
    ({f"{E}.gpu_memory_utilization": 1.5}, f"{E}.gpu_memory_utilization", (V018, V024), (VERL_08, VERL_09)),
    (
        {f"{R}.max_num_batched_tokens": 512, f"{R}.max_num_seqs": 1024},
        f"{R}.max_num_batched_tokens",
        (V018, V024),
        (VERL_08, VERL_09),
    ),  # fmt: skip
    ({f"{R}.enable_chunked_prefill": False}, f"{R}.max_num_batched_tokens", (V018, V024), (VERL_08,)),
    (
        {f"{R}.enable_chunked_prefill": False, f"{E}.max_num_batched_tokens": 4096},
        f"{E}.max_num_batched_tokens",
        (V018, V024),
        (VERL_08, VERL_09),
    ),  # fmt: skip
    ({f"{R}.cudagraph_capture_sizes": [1, 2, 4]}, f"{R}.cudagraph_capture_sizes", (V018, V024), (VERL_08,)),
]


@pytest.mark.parametrize(("changes", "key", "vllms", "verls"), BAD, ids=[str(c[0]) for c in BAD])
@pytest.mark.parametrize("vllm", [V018, V024], ids=["vllm0.18", "vllm0.24"])
@pytest.mark.parametrize("verl", [VERL_08, VERL_09], ids=["verl0.8", "verl0.9"])
def test_what_vllm_refuses_is_refused_by_release_naming_the_key(changes, key, vllms, verls, vllm, verl):
    cfg = config(**changes)
    found = refused(sampling_problems(cfg, vllm) + engine_problems(cfg, vllm, verl))
    if vllm in vllms and verl in verls:
        assert key in found, found
        assert ".".join(map(str, vllm.release)) in found[key]
    else:
        assert key not in found, found[key]


GOOD = [
    {},
    {f"{R}.temperature": 0},  # greedy
    {f"{R}.temperature": 2.0, f"{R}.top_k": 0, f"{R}.top_p": 1.0},
    {f"{R}.top_k": -1},
    {f"{E}.max_num_seq": 64},  # vLLM's argparse takes a unique prefix of --max-num-seqs
    {f"{E}.mm_processor_cache_gb": 0},  # the NPU preset's
    {f"{E}.compilation_config": {"cudagraph_mode": "FULL_DECODE_ONLY", "cudagraph_capture_sizes": [4, 12]}},
    {f"{E}.some_future_flag": None, f"{E}.another_flag": False},  # verl drops None and False before vLLM sees them
    {f"{R}.enable_chunked_prefill": False, f"{R}.max_model_len": 8192, f"{R}.max_num_batched_tokens": 8192},
    {f"{R}.val_kwargs.top_p": 0.0, "trainer.test_freq": -1, "trainer.val_before_train": False},  # never validates
]


@pytest.mark.parametrize("changes", GOOD, ids=[str(c) for c in GOOD])
@pytest.mark.parametrize("vllm", [V018, V024], ids=["vllm0.18", "vllm0.24"])
@pytest.mark.parametrize("verl", [VERL_08, VERL_09], ids=["verl0.8", "verl0.9"])
def test_what_vllm_accepts_is_accepted(changes, vllm, verl):
    cfg = config(**changes)
    assert refused(sampling_problems(cfg, vllm) + engine_problems(cfg, vllm, verl)) == {}


@pytest.mark.parametrize("preset", ["35b_gpu", "35b_npu", "122b_gpu", "122b_npu", "397b_gpu", "397b_npu"])
def test_every_preset_passes_the_vllm_rules_of_its_device(preset):
    assert [str(p) for p in vllm_problems(config(preset), preset.rsplit("_", 1)[1])] == []


def test_a_near_miss_engine_kwarg_gets_a_did_you_mean():
    (message,) = refused(engine_problems(config(**{f"{E}.enable_prefix_cache": True}), V024, VERL_09)).values()
    assert "did you mean enable_prefix_caching?" in message


def test_a_repetition_penalty_warns_that_verls_agent_loop_does_not_send_it():
    (problem,) = sampling_problems(config(**{f"{R}.repetition_penalty": 1.2}), V024)
    assert problem.level == "warning" and problem.keys == (f"{R}.repetition_penalty",)


def test_without_a_shipped_list_for_the_vllm_in_use_engine_kwargs_names_are_left_to_the_full_run():
    found = engine_problems(config(**{f"{E}.max_num_sequences": 64}), VllmInUse((0, 99, 0), True), VERL_09)
    assert refused(found) == {} and [p.keys for p in found] == [(E,)]


def test_a_list_ships_for_each_assumed_vllm_and_names_its_release():
    for release in ASSUMED_VLLM.values():
        assert serve_args(release[:2]), release
    assert set(shipped_snapshots()) >= {r[:2] for r in ASSUMED_VLLM.values()}


ARGUMENT_DICTS = ("args", "engine_kwargs")


def _launch_server_arguments() -> set[str]:
    """Every argument name the installed verl's vLLMHttpServer.launch_server hands `vllm serve`: the keys of the
    dict literals it names *args (args = {...}, dp_args, lora_args, args.update({...})) and args["x"] = ..."""
    source = verl_config_dir().parents[1] / "workers" / "rollout" / "vllm_rollout" / "vllm_async_server.py"
    function = next(
        node
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef) and node.name == "launch_server"
    )
    names: set[str] = set()
    for node in ast.walk(function):
        literal = None
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id.endswith("args") for t in targets) and isinstance(node.value, ast.Dict):
            literal = node.value
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "update" and node.args:
            literal = node.args[0] if isinstance(node.args[0], ast.Dict) else None
        if literal is not None:
            names |= {k.value for k in literal.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        stored = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
        if stored and isinstance(node.slice, ast.Constant) and getattr(node.value, "id", "") in ARGUMENT_DICTS:
            names.add(node.slice.value)
    return names


@pytest.mark.parametrize("device", ["gpu", "npu"])
def test_what_the_installed_verl_passes_is_known_to_the_assumed_vllm_or_refused_under_its_rollout_key(device):
    """verl's own launch code against the shipped list: a name vLLM lacks must be refused by the fast rules
    under the rollout key that makes verl pass it (verl 0.8.0's cuda_graph_sizes from cudagraph_capture_sizes)."""
    passed = _launch_server_arguments()
    assert {"max_model_len", "max_num_seqs", "gpu_memory_utilization", "tensor_parallel_size"} <= passed
    vllm = VllmInUse(ASSUMED_VLLM[device], False)
    unknown = passed - serve_args(vllm.minor)
    cfg = config(**{f"{R}.cudagraph_capture_sizes": [1, 2, 4]})
    made = engine_arguments(cfg, verl_minor())
    assert unknown <= set(made), f"verl passes {unknown - set(made)}, which vLLM {vllm.shown} lacks"
    found = refused(engine_problems(cfg, vllm, verl_minor()))
    assert {made[name][1] for name in unknown} <= set(found)


@pytest.mark.skipif(installed_vllm() is None, reason="vLLM is not installed here (it cannot be on this machine)")
def test_the_shipped_list_matches_the_installed_vllm():
    import dataclasses

    from vllm.engine.arg_utils import AsyncEngineArgs

    shipped = serve_args(installed_vllm()[:2])
    if shipped is None:
        pytest.skip(f"no list ships for vLLM {installed_vllm()}: run scripts/vllm_fields.py on its wheel")
    assert {f.name for f in dataclasses.fields(AsyncEngineArgs) if not f.name.startswith("_")} <= shipped


def test_the_generator_reads_a_wheel_like_vllms(tmp_path):
    """scripts/vllm_fields.py on a tiny vLLM-shaped wheel: dataclass fields and --flags, both spellings."""
    import runpy
    import zipfile

    wheel = tmp_path / "vllm-9.9.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/_version.py", "__version__ = version = '9.9.0'\n")
        archive.writestr(
            "vllm/engine/arg_utils.py",
            "class EngineArgs:\n    max_num_seqs: int = 1\n    _private: int = 0\n"
            "def add(parser):\n    parser.add_argument('--max-model-len', type=int)\n",
        )
        archive.writestr(
            "vllm/entrypoints/openai/cli_args.py",
            "class FrontendArgs:\n    port: int = 8000\ndef make(p):\n    p.add_argument('--headless')\n",
        )
    script = runpy.run_path(str(Path(__file__).parents[2] / "scripts" / "vllm_fields.py"))
    sources = script["read_sources"](wheel)
    assert script["serve_arg_names"](sources) == ["headless", "max_model_len", "max_num_seqs", "port"]
