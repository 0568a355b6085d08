"""The typed workload_info a recording's program needs, from its networks and hyperparameters.

Each registered workload a loop kind maps to (rldse.recording.loops) reads its own Info
(rldse.workloads: DQNInfo, DDPGInfo, ActorLearnerInfo, TabularInfo). Shapes come from the
networks; the schedule (batch, replay capacity, warm-up, ...) from the hyperparameters the
user passes under the Info's own field names. The result is validated against the Info
here, so a missing field fails when the recording starts, naming it, not at simulate time.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rldse.errors import RldseError
from rldse.recording.network import Network, network_info
from rldse.trace import plain

F32 = 4
#: Per transition besides the observations (replay.py's layout): int64 action, float32
#: reward, bool done.
_REPLAY_EXTRA_BYTES = 8 + 4 + 1
#: Per on-policy transition besides the observation: action, logp, reward, done, value.
_ROLLOUT_SCALARS = 5
#: Which networks each workload needs, by the name the user passes them under.
NETWORKS: dict[str, tuple[str, ...]] = {
    "dqn": ("q",), "ddpg": ("actor", "critic"), "actor_learner": ("policy", "value"),
    "tabular": (),
}
#: Workloads that also take one network, under this role: its work is described as one
#: network (a policy alone, REINFORCE's; a shared actor-critic body).
ONE_NETWORK = {"actor_learner": "policy"}


def obs_bytes(net: Network) -> int:
    n = 1
    for d in net.obs_shape:
        n *= d
    return F32 * n


def _dqn(nets: dict[str, Network], hp: dict[str, Any]) -> dict[str, Any]:
    q = nets["q"]
    sizes = q.stand_in_sizes()
    return {**network_info(nets), "obs_dim": sizes[0], "n_actions": sizes[-1],
            "layer_sizes": sizes,
            "n_params": q.n_params, "replay": "uniform", "double": False,
            "transition_bytes": 2 * obs_bytes(q) + _REPLAY_EXTRA_BYTES}


def _ddpg(nets: dict[str, Network], hp: dict[str, Any]) -> dict[str, Any]:
    actor, critic = nets["actor"], nets["critic"]
    a = actor.layer_sizes()
    return {"obs_dim": a[0], "act_dim": a[-1], "actor_sizes": a,
            "critic_sizes": critic.layer_sizes(), "actor_n_params": actor.n_params,
            "critic_n_params": critic.n_params,
            "transition_bytes": 2 * obs_bytes(actor) + F32 * a[-1] + F32 + 1,
            # the ddpg program reads the warm-up under DDPG's own name
            "warmup_steps": hp.get("learning_starts", hp.get("warmup_steps"))}


def _actor_learner(nets: dict[str, Network], hp: dict[str, Any]) -> dict[str, Any]:
    """A policy and a value network, or any other set (a policy alone, REINFORCE's; a
    shared actor-critic body; parts) described as one network, whose per-layer work the
    program reads (its ``value_sizes`` then empty: there is no separate value network)."""
    pi = nets["policy"]
    pair = set(nets) == {"policy", "value"}
    sizes = pi.stand_in_sizes()
    return {**network_info(nets, always=not pair), "actors": 1, "envs_per_actor": 1,
            "obs_dim": sizes[0], "n_actions": sizes[-1], "policy_sizes": sizes,
            "value_sizes": nets["value"].stand_in_sizes() if pair else [],
            "n_params": sum(n.n_params for n in nets.values()),
            "transition_bytes": obs_bytes(pi) + _ROLLOUT_SCALARS * F32}


def _tabular(nets: dict[str, Network], hp: dict[str, Any]) -> dict[str, Any]:
    cells = int(hp.get("n_states", 0)) * int(hp.get("n_actions", 0))
    return {"mode": "online", "agents": 1, "dtype": "fp32", "q_table_bytes": F32 * cells}


_FROM_NETWORKS = {"dqn": _dqn, "ddpg": _ddpg, "actor_learner": _actor_learner,
                  "tabular": _tabular}


def workload_info(workload: str, nets: dict[str, Network],
                  hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """The Info of ``workload`` as a plain dict: network shapes, then every hyperparameter
    named like one of its fields (the user's value wins)."""
    from rldse.workloads import WORKLOADS

    info_type = WORKLOADS.lookup(workload, "workload").info
    info = plain(_FROM_NETWORKS[workload](nets, hyperparameters), "recording: workload_info")
    names = set(info_type.model_fields)
    for spec in info_type.model_fields.values():
        if spec.validation_alias is not None:
            names.update(a for a in spec.validation_alias.choices if isinstance(a, str))
    info.update({k: v for k, v in hyperparameters.items() if k in names})
    try:
        info_type.model_validate(info)
    except ValidationError as exc:  # every missing or bad one at once
        bad = "; ".join(f"hyperparameter '{'.'.join(str(p) for p in err['loc'])}': "
                        f"{err['msg'].lower()}" for err in exc.errors())
        raise RldseError(f"{bad} (the {workload} program reads "
                         f"{', '.join(info_type.model_fields)})", where="recording") from None
    return info
