"""Bad inputs to the estimate, the layout planner, doctor and the submit group, as an outside tester types them.

Every one ends with exit 2 (or 0 where the input is fine), one message naming the key, file or
option to change, no traceback, and nothing written that should not be. The commands run
in-process (their `main(argv)`, as `python -m` calls it) where the exit code and the printed
message are the point; the entrypoint's dry runs run as a subprocess where files on disk are.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.commands import verl_qwen35
from tests.runs import preflight
from verl_qwen35.checks.memory import memory_lines
from verl_qwen35.cli import doctor
from verl_qwen35.cli import estimate as estimate_cli
from verl_qwen35.cli import plan as layouts
from verl_qwen35.config import compose
from verl_qwen35.errors import UserError
from verl_qwen35.run.submit.slurm import settings

GPU35 = ["device=gpu", "model=35b"]


def run_main(main, argv: list[str], capsys) -> tuple[int, str]:
    """(exit code, everything printed) of a command's main, argparse's own exits included."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    out = capsys.readouterr()
    return code, out.out + out.err


def resolved(overrides: list[str]):
    cfg = compose(overrides)
    OmegaConf.resolve(cfg)
    return cfg


# (overrides, the key or option the message must name)
ESTIMATE_BAD = [
    (["hardware.device_memory_gib=abc"], "hardware.device_memory_gib: Value 'abc'"),  # the schema's refusals
    (["hardware.device_memory_gib=null"], "'hardware.device_memory_gib' is not Optional"),
    (["hardware.device_memory_gib=0"], "hardware.device_memory_gib=0"),
    (["hardware.device_memory_gib=-5"], "hardware.device_memory_gib=-5"),
    (["hardware.host_memory_gib=null"], "'hardware.host_memory_gib' is not Optional"),
    (["hardware.host_memory_gib=0"], "hardware.host_memory_gib=0"),
    (["hardware.reserved_gib=-1"], "hardware.reserved_gib=-1"),
    (["hardware.reserved_gib=1000"], "hardware.reserved_gib=1000"),
    (["hardware.reserved_gib=[1]"], "hardware.reserved_gib=[1]"),
    (["parallel.tp=two"], "parallel.tp"),
    (["parallel.tp=0"], "parallel.tp"),
    (["parallel.tp=99999999999999999999"], "parallel.tp"),
    (["parallel.nnodes=0"], "parallel.nnodes"),
    (["parallel.devices_per_node=3"], "parallel.devices_per_node"),
    (["data.max_response_length=1e400"], "data.max_response_length=inf"),
    (["data.max_prompt_length=null"], "data.max_prompt_length is null"),
    (["data.max_prompt_length=-100"], "data.max_prompt_length=-100"),
    (["actor_rollout_ref.rollout.gpu_memory_utilization=0"], "actor_rollout_ref.rollout.gpu_memory_utilization=0"),
    (["actor_rollout_ref.rollout.gpu_memory_utilization=abc"], "gpu_memory_utilization='abc'"),
    (["actor_rollout_ref.rollout.n=0"], "actor_rollout_ref.rollout.n=0"),
    (["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=abc"], "ppo_micro_batch_size_per_gpu='abc'"),
    (["actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction=2"], "fraction=2"),
    (["actor_rollout_ref.actor.megatron.param_offload=maybe"], "param_offload='maybe'"),
    (["model.hidden_size=null"], "'model.hidden_size' is not Optional"),
    (["model.full_attention_interval=0"], "model.full_attention_interval=0"),
    (["model.num_experts_per_tok=1000"], "model.num_experts_per_tok=1000"),
    (["~model.num_attention_heads"], "model.num_attention_heads: Model (DictConfig) does not support deletion"),
    (["model.num_attention_heads=???"], "model.num_attention_heads is missing"),
    (["model=397b", "parallel.nnodes=1"], "parallel.nnodes"),
    (["parallel.gen_dp=0"], "gen_dp=0 must be a positive integer"),
    (["parallel.gen_ep=abc"], "parallel.gen_ep: Value 'abc'"),
    (["+model.linear_conv_kernel_dim=0"], "model.linear_conv_kernel_dim=0"),
    (["actor_rollout_ref.rollout.max_model_len=-1"], "actor_rollout_ref.rollout.max_model_len=-1"),
    (["hardware=null"], "hardware=null removes the hardware preset; choose one of: a2, a3"),
    (["critic=null"], "critic=null removes verl's `critic` config group"),
    (["reward=null"], "reward=null removes verl's `reward` config group"),
    (["actor@actor_rollout_ref.actor=null"], "keep one of: actor, dp_actor, megatron_actor"),
    (["--format", "yaml"], "--format"),
    (["device=tpu"], "device=tpu"),
]


@pytest.mark.parametrize(("overrides", "named"), ESTIMATE_BAD)
def test_estimate_refuses_bad_input_naming_the_key(overrides, named, capsys):
    code, out = run_main(estimate_cli.main, [*GPU35, *overrides], capsys)
    assert code == 2, out
    assert named in out and "Traceback" not in out


def test_estimate_of_a_good_config_still_exits_0(capsys):
    code, out = run_main(estimate_cli.main, [*GPU35, "--format", "json"], capsys)
    assert code == 0 and '"fits": true' in out


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["hardware.device_memory_gib=0"], "hardware.device_memory_gib=0"),
        (["hardware.reserved_gib=-1"], "hardware.reserved_gib=-1"),
        (["data.max_prompt_length=-1"], "[data.max_prompt_length]"),  # issue #7's value check answers first
        (["model.vocab_size=0"], "model.vocab_size=0"),
        (["parallel.gen_dp=0"], "[parallel.gen_dp (actor_rollout_ref.rollout.data_parallel_size)]"),
        (["parallel.gen_ep=0"], "[parallel.gen_ep (actor_rollout_ref.rollout.expert_parallel_size)]"),
    ],
)
def test_dry_run_preflight_names_an_unusable_estimate_input(overrides, named):
    """The memory check in the preflight reports the key instead of crashing the dry run."""
    cfg = resolved([*GPU35, *overrides])
    errors = [str(p) for p in preflight(cfg, "warning") if p.level == "error"]
    assert any(named in e for e in errors), errors
    assert memory_lines(cfg)[0].startswith("memory     (no estimate")  # the plan's memory lines do not crash


LAYOUTS_BAD = [
    (["--top", "-1"], "--top"),
    (["--top", "abc"], "--top"),
    (["--format", "yaml"], "--format"),
    (["parallel.nnodes=0"], "parallel.nnodes=0"),
    (["parallel.nnodes=abc"], "parallel.nnodes: Value 'abc'"),
    (["parallel.nnodes=100000"], "parallel.nnodes=100000"),
    # 3 devices alone now plan (PP 3 with uneven first/last stages); with the embedding counted in
    # the even split (40 + 1 slots, the planner keeps a user's split) no PP divides them.
    (
        [
            "parallel.devices_per_node=3",
            "+megatron.override_transformer_config.account_for_embedding_in_pipeline_split=true",
        ],
        "the preflight accepts no training layout",
    ),
    (["hardware.device_memory_gib=abc"], "hardware.device_memory_gib: Value 'abc'"),
    (["hardware.device_memory_gib=0"], "hardware.device_memory_gib=0"),
    (["data.max_prompt_length=null"], "data.max_prompt_length is null"),
    (["parallel.gen_ep=abc"], "parallel.gen_ep"),
    (["parallel.gen_dp=0"], "parallel.gen_dp"),
    (["parallel.nnodes=true"], "parallel.nnodes: Value 'True' of type 'bool'"),
]


@pytest.mark.parametrize(("overrides", "named"), LAYOUTS_BAD)
def test_layouts_refuses_bad_input_naming_the_key(overrides, named, capsys):
    code, out = run_main(layouts.main, [*GPU35, *overrides], capsys)
    assert code == 2, out
    assert named in out and "Traceback" not in out


def test_layouts_sweep_into_a_file_exits_2_before_searching(tmp_path, capsys):
    target = tmp_path / "afile"
    target.write_text("keep")
    code, out = run_main(layouts.main, [*GPU35, "--top", "1", "--sweep", str(target)], capsys)
    assert code == 2 and f"--sweep {target}: is a file" in out and "Traceback" not in out
    assert target.read_text() == "keep" and "training layouts" not in out  # refused before the search


def test_layouts_sweep_that_cannot_be_written_exits_2(tmp_path, capsys):
    code, out = run_main(layouts.main, [*GPU35, "--top", "1", "--sweep", "/proc/no_such_dir"], capsys)
    assert code == 2 and "--sweep /proc/no_such_dir" in out and "Traceback" not in out


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("hello\n", "a mapping with `components:`"),
        ("a: [1,\n", "not a readable YAML version matrix"),
        ("- 1\n- 2\n", "a mapping with `components:`"),
        ("components:\n  - name: x\n    kind: package\n", "component 0 (x): missing key 'dist'"),
    ],
)
def test_doctor_names_a_bad_matrix_file(tmp_path, text, named, capsys):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text)
    code, out = run_main(doctor.main, ["device=gpu", "--matrix", str(matrix)], capsys)
    assert code == 2 and f"--matrix {matrix}" in out and named in out and "Traceback" not in out


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["device=tpu"], "device=tpu"), (["tpu"], "device=tpu"), (["--format", "yaml"], "--format"), (["x", "y"], "y")],
)
def test_doctor_refuses_bad_arguments(argv, named, capsys):
    code, out = run_main(doctor.main, argv, capsys)
    assert code == 2 and named in out and "Traceback" not in out


SLURM = [*GPU35, "submit=slurm"]
RAY_JOB = [*GPU35, "submit=ray_job"]
SUBMIT_BAD = [
    (SLURM, "submit.ray.wait_timeout=-5", "submit.ray.wait_timeout=-5"),
    (SLURM, "submit.ray.port=70000", "submit.ray.port=70000"),
    (SLURM, "submit.ray.dashboard_port=6379", "submit.ray.port and submit.ray.dashboard_port are the same port"),
    (SLURM, "submit.time='$(rm -rf ~)'", "submit.time='$(rm -rf ~)'"),
    (SLURM, "submit.time=tomorrow", "submit.time='tomorrow'"),
    (SLURM, "submit.mounts=['$(touch pwned):/x']", "submit.mounts[0]"),
    (SLURM, "submit.mounts=['/a:/b,/c:/d']", "no comma"),
    (SLURM, "submit.mounts=[1]", "submit.mounts entry '1'"),  # the schema's List[str] reads it as '1'
    (SLURM, "submit.partition='a b'", "submit.partition='a b'"),
    (SLURM, "submit.job_name='a;touch pwned'", "submit.job_name="),
    (SLURM, 'submit.account="x\'y"', "submit.account="),
    (SLURM, "submit.container='img --uid=0'", "submit.container="),
    (SLURM, "submit.sbatch=['--comment=a b']", "one sbatch option per entry"),
    (SLURM, "submit.sbatch=[qos]", "one sbatch option per entry"),
    (SLURM, "submit.python='python \"'", "submit.python="),
    (SLURM, "submit.python=' '", "names no command"),
    (SLURM, "submit.ray.temp_dir='/tmp/ray x'", "submit.ray.temp_dir='/tmp/ray x': must be one word"),
    (SLURM, "submit.cpus_per_node=0", "submit.cpus_per_node=0"),
    (SLURM, "submit.ray.interface='ib0 x'", "submit.ray.interface="),
    (SLURM, "submit.backend=pbs", "submit.backend='pbs'"),
    (RAY_JOB, "submit.address=garbage:x", "submit.address='garbage:x'"),
    (RAY_JOB, "submit.address=ftp://h:1", "submit.address='ftp://h:1'"),
    (RAY_JOB, "submit.address=http://h:99999", "submit.address='http://h:99999'"),
    (RAY_JOB, "submit.address=http://", "submit.address='http://'"),
    (RAY_JOB, "submit.address=''", "submit.address=''"),
    (RAY_JOB, "submit.address=auto", "submit.address='auto'"),
    (RAY_JOB, "submit.address=127.0.0.1:6379", "submit.address='127.0.0.1:6379'"),
    (RAY_JOB, "submit.address=ray://head:10001", "submit.address='ray://head:10001'"),
]


@pytest.mark.parametrize(("base", "override", "named"), SUBMIT_BAD)
def test_preflight_refuses_unusable_submit_values_naming_the_key(base, override, named):
    errors = [str(p) for p in preflight(resolved([*base, override]), "warning") if p.level == "error"]
    assert any(named in e for e in errors), errors


def test_a_submit_value_with_a_line_break_is_refused_while_composing_naming_the_key():
    """A line break could end a line of job.sbatch: refused before the preflight (config/line_breaks.py)."""
    with pytest.raises(UserError, match=r"^submit\.partition: its value holds a line break"):
        compose([*SLURM, "submit.partition='a\nb'"])


# Wrong types and nulls of our typed nodes: the schema refuses them while composing, naming the key.
SCHEMA_REFUSED = [
    (SLURM, "submit.ray.wait_timeout=abc", "submit.ray.wait_timeout: Value 'abc'"),
    (SLURM, "submit.ray.wait_timeout=null", "'submit.ray.wait_timeout' is not Optional"),
    (SLURM, "submit.ray.port=abc", "submit.ray.port: Value 'abc'"),
    (SLURM, "submit.mounts=/data:/data", "submit.mounts: Invalid value assigned: str is not a ListConfig"),
    (SLURM, "submit.sbatch='--qos=high'", "submit.sbatch: Invalid value assigned: str is not a ListConfig"),
    (SLURM, "submit.sbatch=[null]", "submit.sbatch[0]: Invalid type assigned: NoneType"),
    (SLURM, "submit.python=null", "'submit.python' is not Optional"),
    (SLURM, "submit.setup=echo", "submit.setup: Invalid value assigned: str is not a ListConfig"),
    (SLURM, "submit.ray.head_args=--foo", "submit.ray.head_args: Invalid value assigned: str is not a ListConfig"),
    (SLURM, "submit.ray.worker_args=--foo", "submit.ray.worker_args: Invalid value assigned: str is not a ListConfig"),
    (SLURM, "submit.cpus_per_node=abc", "submit.cpus_per_node: Value 'abc'"),
    (SLURM, "submit.exclusive=maybe", "submit.exclusive: Value 'maybe' is not a valid bool"),
    (SLURM, "submit.ray=null", "'submit.ray' is not Optional"),
    (RAY_JOB, "submit.address=null", "'submit.address' is not Optional"),
    (GPU35, "launch_checks={stack: maybe}", "launch_checks.stack: Value 'maybe' is not a valid bool"),
    (GPU35, "launch_checks.devices=maybe", "launch_checks.devices: Value 'maybe' is not a valid bool"),
]


@pytest.mark.parametrize(("base", "override", "named"), SCHEMA_REFUSED)
def test_wrong_types_of_our_nodes_are_refused_while_composing(base, override, named):
    with pytest.raises(UserError) as refused:
        compose([*base, override])
    assert named in str(refused.value)


SECRET_VALUE = "hf_Q9x7SECRETVALUE"
SUBMIT_SECRETS = [
    (SLURM, f"submit.setup=['export HF_TOKEN={SECRET_VALUE}']", "submit.setup[0]"),
    (SLURM, f"submit.setup=['export WANDB_API_KEY={SECRET_VALUE}; echo']", "submit.setup[0]"),
    (SLURM, f"submit.sbatch=['--export=ALL,MY_PASSWORD={SECRET_VALUE}']", "submit.sbatch[0]"),
    (SLURM, f"submit.python='env OPENAI_API_KEY={SECRET_VALUE} python'", "submit.python"),
    (SLURM, f"submit.ray.head_args=['--env=AWS_SECRET_ACCESS_KEY={SECRET_VALUE}']", "submit.ray.head_args[0]"),
    (RAY_JOB, f"submit.address='http://admin:{SECRET_VALUE}@head:8265'", "submit.address"),
]


@pytest.mark.parametrize(("base", "override", "named"), SUBMIT_SECRETS)
def test_secret_values_in_submit_keys_are_refused_without_echoing_them(base, override, named):
    """Refused while the command line is read (secret_scan), as the entrypoint does before Hydra writes .hydra/."""
    with pytest.raises(UserError) as refused:
        compose([*base, override])
    assert str(refused.value).startswith(f"{named.split('[')[0]}: ") and SECRET_VALUE not in str(refused.value)


def test_secret_in_submit_setup_is_refused_before_anything_is_written(tmp_path):
    run = verl_qwen35(tmp_path, *SUBMIT_SECRETS[0][0], "dry_run=true", "hydra.run.dir=run", SUBMIT_SECRETS[0][1])
    assert run.returncode == 2 and "Traceback" not in run.stderr and "submit.setup" in run.stderr
    assert SECRET_VALUE not in run.stdout + run.stderr and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("base", "override"),
    [
        (SLURM, "submit.setup=['export HF_TOKEN=$HF_TOKEN', 'export HF_TOKEN_PATH=/secrets/hf']"),
        (SLURM, "submit.sbatch=['--export=ALL,TOKENIZERS_PARALLELISM=false']"),
        (SLURM, "submit.time=2-00:00:00"),
        (SLURM, "submit.time=90"),
        (SLURM, "submit.mounts=[/data:/data,/models:/models:ro]"),
        (SLURM, "submit.sbatch=['--qos=high','--gres=npu:16']"),
        (RAY_JOB, "submit.address=http://head:8265"),
        (RAY_JOB, "submit.address=https://head"),
    ],
)
def test_usable_submit_values_pass(base, override):
    errors = [str(p) for p in preflight(resolved([*base, override]), "warning") if p.level == "error"]
    assert not [e for e in errors if "[submit" in e], errors


@pytest.mark.parametrize(
    ("override", "refused"),
    [
        ("submit.ray.wait_timeout=abc", "verl-qwen35: error: "),  # by the schema, while composing
        ("submit.python=null", "verl-qwen35: error: "),
        ("submit.time='$(touch pwned)'", "verdict    REFUSED"),  # by the preflight's value rules
    ],
)
def test_refused_submit_writes_no_script_and_no_launch_file(tmp_path, override, refused):
    run = verl_qwen35(tmp_path, *SLURM, "dry_run=true", "hydra.run.dir=run", override)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert override.split("=")[0] in run.stderr and refused in run.stderr
    assert not (tmp_path / "run" / "job.sbatch").exists() and not (tmp_path / "run" / "launch.yaml").exists()
    assert not (tmp_path / "pwned").exists()


def test_hostile_values_stay_data_in_the_settings_block(tmp_path, monkeypatch):
    """Values that reach job.sbatch (python, Ray args, env values from the config and the shell) come out
    of bash exactly as given, and nothing in them runs."""
    marker = tmp_path / "pwned"
    payload = f"$(touch {marker}); `touch {marker}`; touch {marker} && $HOME"  # no quotes: Hydra's own syntax
    hostile = f"{payload} '\" \\"  # from the shell: quotes and a backslash too
    monkeypatch.setenv("VLLM_USE_V1", hostile)  # the shell's value wins and is exported by the script
    cfg = resolved(
        [
            *SLURM,
            f"submit.python='python -c \"{payload}\"'",
            f"submit.ray.head_args=['--x={payload}']",
            f"+env.set.MY_FLAG='{payload}'",
        ]
    )
    assert not [p for p in preflight(cfg, "warning") if p.level == "error" and "[submit" in str(p)]
    block = "\n".join(settings(cfg, tmp_path / "run dir", "0" * 64))
    show = 'printf "%s\\n" "$RUN_DIR" "${PYTHON[@]}" "${RAY_HEAD_ARGS[@]}" "$VLLM_USE_V1" "$MY_FLAG"'
    done = subprocess.run(["bash", "-euc", f"{block}\n{show}"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = [str(tmp_path / "run dir"), "python", "-c", payload, f"--x={payload}", hostile, payload]
    assert done.stdout.splitlines() == expected
    assert not marker.exists()


@pytest.mark.parametrize(
    ("device", "override", "ray_address", "named"),
    [
        ("gpu", "+ray_kwargs.ray_init.num_gpus=abc", "local", "ray_kwargs.ray_init.num_gpus='abc'"),
        ("gpu", "+ray_kwargs.ray_init.num_gpus=-1", "local", "ray_kwargs.ray_init.num_gpus=-1"),
        ("npu", "+ray_kwargs.ray_init.resources={NPU: abc}", "local", "ray_kwargs.ray_init.resources.NPU='abc'"),
        ("gpu", None, "garbage", "your shell's RAY_ADDRESS=garbage"),
        ("gpu", "+ray_kwargs.ray_init.address=foo::1", "local", "ray_kwargs.ray_init.address=foo::1"),
    ],
)
def test_launch_device_check_names_an_unusable_ray_setting(device, override, ray_address, named, monkeypatch):
    """The launch-time device check (no Ray started: each value is refused before any connection)."""
    from verl_qwen35.run.devices import device_problems

    monkeypatch.setenv("RAY_ADDRESS", ray_address)
    cfg = resolved([f"device={device}", "model=35b", *([override] if override else [])])
    found = [str(p) for p in device_problems(cfg, device)]
    assert len(found) == 1 and named in found[0], found


def test_launch_checks_that_are_not_a_section_are_checked():
    from verl_qwen35.run.machine import launch_problems

    cfg = resolved([*GPU35, "launch_checks=abc"])
    found = [str(p) for p in launch_problems(cfg)]
    assert len(found) == 1 and "[launch_checks]" in found[0], found


def test_slurm_run_dir_an_sbatch_line_cannot_carry_exits_2_writing_no_script(tmp_path):
    run = verl_qwen35(tmp_path, *SLURM, "dry_run=true", "hydra.run.dir='run #1'")
    assert run.returncode == 2 and "Traceback" not in run.stderr and "set hydra.run.dir" in run.stderr
    assert not (tmp_path / "run #1" / "job.sbatch").exists() and not (tmp_path / "run #1" / "launch.yaml").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", *GPU35, "--top", "20", "--format", "json"],
        ["estimate", *GPU35, "--format", "json"],
        ["doctor", "device=gpu", "--format", "json"],
    ],
)
def test_output_into_a_closed_pipe_ends_quietly(argv, tmp_path):
    """`... | head -1`: the reader goes away after one line; no BrokenPipeError traceback."""
    environ = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    with subprocess.Popen(
        [sys.executable, "-m", "verl_qwen35", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdout.readline()  # the command did print
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait()
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert code in (0, 2, 141)


def _own_model(tmp_path: Path, drop: str | None) -> Path:
    """A --config-dir with model/mine.yaml (the 35B facts, minus `drop`) and its parallel/mine_gpu.yaml."""
    conf = Path(__file__).parents[2] / "conf"
    (tmp_path / "model").mkdir()
    (tmp_path / "parallel").mkdir()
    text = (conf / "model" / "35b.yaml").read_text()
    if drop:
        text = "\n".join(line for line in text.splitlines() if not line.startswith(f"  {drop}:"))
    (tmp_path / "model" / "mine.yaml").write_text(text)
    (tmp_path / "parallel" / "mine_gpu.yaml").write_text((conf / "parallel" / "35b_gpu.yaml").read_text())
    return tmp_path


@pytest.mark.parametrize("main", [estimate_cli.main, layouts.main])
def test_config_dir_model_without_a_fact_the_estimate_needs_is_named(main, tmp_path, capsys):
    own = _own_model(tmp_path, drop="hidden_size")
    code, out = run_main(main, ["--config-dir", str(own), "device=gpu", "model=mine"], capsys)
    assert code == 2 and "model.hidden_size is missing" in out and "model/<name>.yaml" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("main", [estimate_cli.main, layouts.main])
def test_config_dir_model_with_every_fact_is_estimated(main, tmp_path, capsys):
    code, out = run_main(main, ["--config-dir", str(_own_model(tmp_path, None)), "device=gpu", "model=mine"], capsys)
    assert code == 0, out


@pytest.mark.parametrize("main", [estimate_cli.main, layouts.main])
def test_config_dir_that_does_not_exist_is_named(main, tmp_path, capsys):
    code, out = run_main(main, ["--config-dir", str(tmp_path / "nope"), *GPU35], capsys)
    assert code == 2 and f"--config-dir {tmp_path / 'nope'}: no such directory" in out and "Traceback" not in out
