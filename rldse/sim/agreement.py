"""The fast engine against the reference engine on one system: the metrics it holds
the fast paths to (makespan, throughput, every device's busy time and its busy time per
phase, energy, p95 of the per-iteration time) and their relative differences.

Where nothing contends (UNCONTENDED: actors on cores of their own, every device with a
lane for each process that may hold it) the fast paths schedule the same operations at
the same times as the reference engine, merged only in how they are summed, so they
agree to ``EXACT_TOLERANCE`` (tests/sim/test_exact.py). ``TOLERANCE`` (1 %) remains only
for CONFIGS, where contention is resolved differently (tests/sim/test_reference.py):
more actors than cores (off-policy: a chunk of steps holds a core as one FIFO job, not
step by step; actor-learner and tabular: the same processor sharing either way), acting
on a GPU lane shared with other actors or the learner (an actor's batch-1 kernels queue
as one block), and replay and learner on one GPU (booked ahead, not at arrival).
One uncontended difference is left outside both: with RM inserts on a GPU
(``replay: gpu``, ``learner: async``) merged async prices candidate insert sizes while
it solves its fixed point, and the GPU model's energy ledger weighs operations priced,
not booked (rldse.models.gpu.GpuModel.dynamic_share), so energy moves by up to 4e-5;
times and busy seconds stay within EXACT_TOLERANCE.

Used by tests/sim/test_reference.py, tests/sim/test_exact.py and
benchmarks/fidelity/reference_agreement.py; a fast path that misses ``TOLERANCE`` on a contended
configuration is either fixed or not taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rldse.sim.machine import Machine
from rldse.system import ResolvedSystem, parse_spec, resolve
from rldse.trace import Trace, load_trace

#: Largest relative difference allowed between the engines on any metric where
#: contention is resolved differently (CONFIGS).
TOLERANCE = 0.01
#: ... and where nothing contends (UNCONTENDED): float rounding of merged sums.
EXACT_TOLERANCE = 1e-9


def metrics(trace: Trace, system, seed: int = 0, engine: str = "fast") -> dict[str, float]:
    """Run ``system`` on one engine; the compared metrics by name (``busy_s:DEVICE`` per
    device, ``iter_p95_s`` only where the program marks iterations)."""
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    m = Machine(trace, system, seed=seed, engine=engine)
    r = m.result(system.workload.program(m))
    out = {"makespan_s": r.sim_time_s, "env_steps_per_s": r.env_steps_per_s,
           "energy_j": r.energy_j}
    out.update({f"busy_s:{d.name}": d.busy_s for d in r.devices})
    out.update({f"busy_s:{d.name}:{phase}": s for d in r.devices
                for phase, s in d.phase_busy_s.items()})
    times = m.iteration_times_s()
    if len(times):
        out["iter_p95_s"] = float(np.percentile(times, 95))
    return out


@dataclass(frozen=True)
class Agreement:
    """Both engines' metrics and the fast one's relative difference on each."""

    fast: dict[str, float]
    reference: dict[str, float]

    @property
    def errors(self) -> dict[str, float]:
        """fast / reference - 1 per metric (0 where both are 0)."""
        out = {}
        for key, ref in self.reference.items():
            got = self.fast[key]
            out[key] = 0.0 if got == ref else (got / ref - 1.0 if ref else float("inf"))
        return out

    @property
    def worst(self) -> tuple[str, float]:
        key = max(self.errors, key=lambda k: abs(self.errors[k]))
        return key, self.errors[key]


DGX = {"cpu": {"preset": "xeon-e5-2698-v4", "sockets": 2}, "gpu": {"preset": "v100-sxm2"}}
SMALL = {"cpu": {"preset": "epyc-7742", "cores": 4}}  # a CPU of 4 cores, actors beyond
ONE_GPU = {"cpu": {"preset": "xeon-e5-2698-v4", "cores": 4}, "gpu": {"preset": "v100-sxm2"}}

#: Contended configurations of the three program families: more actors than
#: cores, replay and learner on one GPU, central inference beside the learner, more
#: tabular workers than cores; name -> (shipped trace, system, env_steps at scale 1).
CONFIGS: dict[str, tuple[str, dict, int]] = {
    # off-policy: DQN (PER and uniform) and DDPG
    "dqn-per replay+learn on one V100, async": (
        "dqn_cartpole_per", {**DGX, "placement": {"act": "cpu", "learn": "gpu", "replay": "gpu"},
                             "workload": {"learner": "async"}}, 6000),
    "dqn-per 8 actors on 2 cores, async": (
        "dqn_cartpole_per", {**SMALL, "placement": {"act": "cpu", "learn": "cpu",
                                                    "replay": "cpu"},
                             "workload": {"learner": "async", "actors": 8, "cores": 2}}, 6000),
    "dqn-per 8 actors on 2 cores, sync": (
        "dqn_cartpole_per", {**SMALL, "placement": {"act": "cpu", "learn": "cpu",
                                                    "replay": "cpu"},
                             "workload": {"learner": "sync", "actors": 8, "cores": 2}}, 6000),
    "dqn-uniform act on V100, 3 actors on their own cores, sync": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu",
                                                          "replay": "cpu"},
                                 "workload": {"learner": "sync", "actors": 3}}, 6000),
    "dqn-uniform act+learn+replay on one V100, 6 actors, async": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu",
                                                          "replay": "gpu"},
                                 "workload": {"learner": "async", "actors": 6}}, 6000),
    "dqn-uniform act on V100 beside learner, sync, 6 actors on 2 cores": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu",
                                                          "replay": "cpu"},
                                 "workload": {"learner": "sync", "actors": 6, "cores": 2}},
        6000),
    "ddpg replay+learn on one V100, 4 actors, async": (
        "ddpg_pendulum", {**ONE_GPU, "placement": {"act": "cpu", "learn": "gpu",
                                                   "replay": "gpu"},
                          "workload": {"learner": "async", "actors": 4}}, 4000),
    "ddpg 6 actors on 2 cores, sync": (
        "ddpg_pendulum", {**SMALL, "placement": {"act": "cpu", "learn": "cpu", "replay": "cpu"},
                          "workload": {"learner": "sync", "actors": 6, "cores": 2}}, 4000),
    # actor-learner PPO
    "ppo 8 actors on 2 cores, local inference, sync": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 2}}, 16384),
    "ppo 8 actors on 3 cores, local inference, async": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 3,
                                                  "learner": "async"}}, 16384),
    "ppo central inference beside the learner on one V100, sync": (
        "actor_learner_cartpole_2", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu"},
                                     "workload": {"actors": 8, "inference": "central"}},
        16384),
    "ppo central inference beside the learner on one V100, async": (
        "actor_learner_cartpole_2", {**ONE_GPU, "placement": {"act": "gpu", "learn": "gpu"},
                                     "workload": {"actors": 8, "inference": "central",
                                                  "learner": "async"}}, 16384),
    "ppo central inference on a CPU core, 8 actors on 2 cores": (
        "actor_learner_cartpole_2", {**SMALL, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 8, "cores": 2,
                                                  "inference": "central"}}, 16384),
    "pong ppo 6 actors on 2 cores, learner on a V100": (
        "pong_ppo", {**ONE_GPU, "placement": {"act": "cpu", "learn": "gpu"},
                     "workload": {"actors": 6, "cores": 2}}, 3072),
    # tabular
    "tabular offline 7 agents, 5 workers on 2 cores": (
        "tabular_taxi_offline_7", {"cpu": {"preset": "epyc-7742", "cores": 2},
                                   "placement": {"q_update": "cpu"},
                                   "workload": {"cores": 5}}, 0),
    "tabular online taxi (one agent)": (
        "tabular_taxi", {**SMALL, "placement": {}}, 4000),
}


CPU = {"cpu": {"preset": "epyc-7742"}}
DGX_LEARN = {**DGX, "placement": {"act": "cpu", "learn": "gpu", "replay": "cpu"}}

#: Uncontended configurations of the three program families, each taking a fast path:
#: name -> (shipped trace, system, env_steps at scale 1).
UNCONTENDED: dict[str, tuple[str, dict, int]] = {
    # off-policy: merged sync rounds (merged.py), merged async (maxplus.py), and the
    # event loop's chunks with updates booked ahead (sync with policy lag)
    "dqn-uniform cpu, sync": (
        "dqn_cartpole_uniform", {**CPU, "workload": {"learner": "sync"}}, 6000),
    "dqn-uniform 3 actors on a cpu, async": (
        "dqn_cartpole_uniform", {**CPU, "workload": {"learner": "async", "actors": 3}}, 6000),
    "dqn-uniform learner on a V100 (the README example), async": (
        "dqn_cartpole_uniform", {**DGX_LEARN, "workload": {"learner": "async"}}, 6000),
    "dqn-uniform learner on a V100 (the README example), sync": (
        "dqn_cartpole_uniform", {**DGX_LEARN, "workload": {"learner": "sync"}}, 6000),
    "dqn-per learner on a V100, 2 actors, sync": (
        "dqn_cartpole_per", {**DGX_LEARN, "workload": {"learner": "sync", "actors": 2}},
        6000),
    "dqn-per learner on a V100, 2 actors, async": (
        "dqn_cartpole_per", {**DGX_LEARN, "workload": {"learner": "async", "actors": 2}},
        6000),
    "dqn-per learner on a V100, 2 actors, sync, parameters every 4 updates": (
        "dqn_cartpole_per", {**DGX_LEARN, "workload": {"learner": "sync", "actors": 2,
                                                       "sync_interval": 4}}, 6000),
    "dqn-per replay on a V100, sync": (
        "dqn_cartpole_per", {**ONE_GPU, "placement": {"act": "cpu", "learn": "cpu",
                                                      "replay": "gpu"},
                             "workload": {"learner": "sync"}}, 6000),
    "dqn-uniform act on a V100, one actor, async": (
        "dqn_cartpole_uniform", {**ONE_GPU, "placement": {"act": "gpu", "learn": "cpu",
                                                          "replay": "cpu"},
                                 "workload": {"learner": "async"}}, 6000),
    "ddpg learner on a V100, 3 actors, async": (
        "ddpg_pendulum", {**DGX_LEARN, "workload": {"learner": "async", "actors": 3}}, 4000),
    "amper replay on a TCAM, async": (
        "amper_k_cartpole", {**CPU, "tcam": {"preset": "fefet-tcam-64"},
                             "placement": {"act": "cpu", "learn": "cpu", "replay": "tcam"},
                             "workload": {"learner": "async"}}, 6000),
    # actor-learner PPO, local inference, actors on their own cores
    "ppo 2 actors, learner on a V100, sync": (
        "actor_learner_cartpole_2", {**DGX, "placement": {"act": "cpu", "learn": "gpu"},
                                     "workload": {"actors": 2}}, 8192),
    "ppo 2 actors on a cpu, async": (
        "actor_learner_cartpole_2", {**CPU, "placement": {"act": "cpu", "learn": "cpu"},
                                     "workload": {"actors": 2, "learner": "async"}}, 8192),
    # tabular: online (merged chunks of steps) and offline (workers on their own cores)
    "tabular online taxi": ("tabular_taxi", {**CPU, "placement": {}}, 4000),
    "tabular offline 7 agents on 7 workers": (
        "tabular_taxi_offline_7", {**CPU, "placement": {"q_update": "cpu"},
                                   "workload": {"cores": 7}}, 0),
}


def system(raw: dict, env_steps: int, scale: int):
    wl = dict(raw.get("workload", {}))
    if env_steps:
        wl["env_steps"] = env_steps * scale
    return parse_spec({"name": "agreement", **raw, "workload": wl})


def run(name: str, traces: Path, scale: int = 1, seed: int = 0) -> Agreement:
    """Configuration ``name`` of CONFIGS or UNCONTENDED on both engines, its trace from the ``traces``
    folder (the repository's traces/), env_steps × ``scale``."""
    trace, raw, steps = {**CONFIGS, **UNCONTENDED}[name]
    return agreement(load_trace(traces / f"{trace}.parquet"), system(raw, steps, scale), seed)


def agreement(trace: Trace, system, seed: int = 0) -> Agreement:
    """Run ``system`` on both engines with the same seed (the same cost-row draws)."""
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    return Agreement(fast=metrics(trace, system, seed, "fast"),
                     reference=metrics(trace, system, seed, "reference"))
