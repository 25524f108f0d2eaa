"""4 CPU devices give the same DP-SGD update as one device for the same key, and the
clipped sum comes back reduce-scattered (sliced over the devices), so that the noise draw after
it is sliced too (jdp.dpsgd.parallel).

The device count must be set before JAX is imported, so the check runs in a subprocess
with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``. Repeated 2- and 4-device runs
and the sharded step's cost: scripts/multi_device_check.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jdp.dpsgd.parallel import scatter_axis

SCRIPT = r"""
import json, sys
import jax, jax.numpy as jnp, numpy as np, optax
sys.path.insert(0, sys.argv[1])
from dpsgd_problems import mlp_problem
from jdp.dpsgd import DPSGDConfig, Performance, data_mesh, make_clipped_sum_fn, train

assert jax.device_count() == 4, jax.devices()
loss_fn, params, data = mlp_problem(8)
mask = jnp.arange(8) < 7
mesh = data_mesh()
out = {}
# the ghost clipped sum, sharded: equal to one device's and reduce-scattered over the devices
one, _ = make_clipped_sum_fn(loss_fn, method="ghost")(params, data, mask, jax.random.key(9), 0.4)
four, _ = make_clipped_sum_fn(loss_fn, method="ghost", mesh=mesh)(params, data, mask, jax.random.key(9), 0.4)
diff = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(one.grads), jax.tree.leaves(four.grads)))
moved = max(float(jnp.max(jnp.abs(a))) for a in jax.tree.leaves(one.grads))
out["ghost"] = {"diff": diff, "moved": moved}
specs = jax.tree.map(lambda x: tuple(x.sharding.spec), four.grads)

# whole steps (the general path's sharded sum, then the sliced noise draw and the update)
host = jax.tree.map(np.asarray, data)
config = DPSGDConfig(l2_clip_norm=0.4, sampling_prob=0.5, expected_batch_size=4.0, steps=3, noise_multiplier=1.3)
one = Performance(clipping="general")
four = Performance(clipping="general", mesh=mesh)
r1 = train(jax.random.key(3), loss_fn, params, optax.sgd(0.5), host, config, performance=one)
r4 = train(jax.random.key(3), loss_fn, params, optax.sgd(0.5), host, config, performance=four)
diff = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(r1.params), jax.tree.leaves(r4.params)))
moved = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(r1.params), jax.tree.leaves(params)))
out["train"] = {"diff": diff, "moved": moved}

print(json.dumps({"results": out, "specs": specs}))
"""


def test_four_devices_equal_one_device():
    here = Path(__file__).parent
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu"
    )
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(here)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = json.loads(proc.stdout.strip().splitlines()[-1])
    for method, r in printed["results"].items():
        # the sum is not zero; the steps did something (noise std 0.65 / 8 per coordinate)
        assert r["moved"] > 1e-3, method
        assert r["diff"] < 1e-5, (method, r)
    # mlp_problem's MLP (6, 3) on 4 input features: the leaves whose first axis splits over 4
    # devices come back sliced along it, the others (6 and 3 rows) replicated
    layers = printed["specs"]["params"]
    assert layers["Dense_0"]["kernel"] == ["data"]
    assert layers["Dense_0"]["bias"] == [] and layers["Dense_1"]["bias"] == []
    assert layers["Dense_1"]["kernel"] == []


def test_scatter_axis_is_the_first_axis_the_devices_divide():
    assert scatter_axis((784, 1000), 4) == 0
    assert scatter_axis((10, 8), 4) == 1
    assert scatter_axis((6, 3), 4) is None
    assert scatter_axis((), 2) is None
