"""Shared fixtures: the six shipped combinations and the reference layout table."""

import pytest

COMBOS = [("35b", "gpu"), ("35b", "npu"), ("122b", "gpu"), ("122b", "npu"), ("397b", "gpu"), ("397b", "npu")]

# ../shared/reference/README.md, "Parallel layouts in use":
# (nnodes, devices_per_node, tp, pp, cp, ep, etp, rollout tp, rollout dp, rollout ep)
REFERENCE_LAYOUTS = {
    ("35b", "gpu"): (1, 8, 2, 1, 1, 8, 1, 8, 1, 1),
    ("35b", "npu"): (1, 16, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "gpu"): (4, 8, 2, 2, 1, 8, 1, 8, 1, 1),
    ("122b", "npu"): (4, 16, 2, 4, 1, 16, 1, 16, 1, 1),
    ("397b", "gpu"): (16, 8, 2, 2, 1, 64, 1, 8, 16, 128),
    ("397b", "npu"): (16, 16, 2, 4, 1, 64, 1, 16, 16, 256),
}


@pytest.fixture(params=COMBOS, ids=lambda c: f"{c[0]}_{c[1]}")
def combo(request) -> tuple[str, str]:
    return request.param
