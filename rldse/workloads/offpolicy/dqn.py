"""DQN (Mnih et al. 2015) on the numpy MLP, with uniform, prioritized (sum tree) or
AMPER-style (quantized priorities searched as in TCAM; amper.py) replay, captured as a trace.

One process (worker ``host``) runs the classic loop; every row's ``iter`` is the env
step it happened in. Per env step: ``act`` (epsilon-greedy; a batch-1 forward only when
greedy), ``env_step``, ``replay_add``, and ``env_reset`` at episode ends. Every
``learn_every`` steps after ``learning_starts``: ``replay_sample``, ``learn`` and, for
PER and AMPER, ``replay_update``. Every ``target_sync`` steps: ``sync`` (hard target copy).
AMPER rows carry the associative memory's work in ``touches``: TCAM searches for
``replay_sample``, TCAM rows written for ``replay_add`` and ``replay_update`` (amper.py);
their totals per item go to ``workload_info["amper"]`` for the simulated program.

Work of ``learn`` is the sum of mlp.py's formulas: forward of the online net on s,
forward of the target net on s' (and of the online net on s' for double DQN), backward
of the online net, Adam over its parameters, and the TD target and loss kernels
(``td_work``).

Atari (``ALE/...``; common/atari.py): the Q-network is the Nature-CNN in PyTorch
(``CNNDQNAgent``), replay keeps uint8 frame stacks, and ``learn`` and ``act`` work is
kernels/nature_cnn.py's count; ``workload_info['network']`` describes the network per
layer (network_work.py), which the program rescales with (as it does a recorded network's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import ConfigDict, Field

from rldse.kernels import nature_cnn
from rldse.kernels.mlp import (
    F32,
    MLP,
    Adam,
    Work,
    adam_work,
    cold,
    copy_work,
    elementwise,
    forward_work,
    network,
)
from rldse.kernels.network_work import NetworkWork
from rldse.kernels.replay import Batch, OpWork, PrioritizedReplay, UniformReplay
from rldse.strict import UserModel
from rldse.trace import Trace
from rldse.workloads.common import atari, base
from rldse.workloads.common.base import CaptureConfig, Progress, no_progress
from rldse.workloads.common.recorder import NullRecorder, Recorder
from rldse.workloads.offpolicy.amper import AmperReplay
from rldse.workloads.offpolicy.loop import capture_trace, train_offpolicy

if TYPE_CHECKING:  # `rldse capture dqn --help` reads DQNConfig without gymnasium
    import gymnasium as gym


class DQNConfig(UserModel):
    """Everything a DQN run depends on; CaptureConfig.options may override any field.

    Defaults were chosen on CartPole-v1 over 8 seeds: MSE loss, an update every 2 env
    steps and a target copy every 200 learned steadily, where Huber or slower target
    syncs plateaued near 100 or collapsed on some seeds. Layers stay 64 wide so that
    batch-64 matmuls stay under OpenBLAS's threading threshold: threaded BLAS on such
    small matrices ran 20x slower on a busy 2-core host.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str
    steps: int = Field(gt=0, description="env steps")
    seed: int = 0
    replay: Literal["uniform", "per", "amper_k", "amper_fr"] = "uniform"
    hidden: tuple[int, ...] = (64, 64)
    lr: float = Field(1e-3, gt=0)
    gamma: float = Field(0.99, ge=0, le=1)
    batch_size: int = Field(64, gt=0)
    buffer_size: int = Field(50_000, gt=0)
    learning_starts: int = Field(1_000, ge=0, description="env steps before the first update")
    learn_every: int = Field(2, gt=0, description="env steps per gradient update")
    target_sync: int = Field(200, gt=0, description="env steps between hard target copies")
    eps_start: float = Field(1.0, ge=0, le=1)
    eps_end: float = Field(0.01, ge=0, le=1)
    eps_decay_steps: int = Field(5_000, gt=0, description="linear epsilon decay length")
    double: bool = False
    loss: Literal["huber", "mse"] = "mse"
    per_alpha: float = Field(0.6, ge=0)
    per_beta0: float = Field(0.4, ge=0, le=1, description="IS exponent, annealed to 1")
    per_eps: float = Field(1e-3, gt=0)
    amper_bits: int = Field(6, ge=1, le=8, description="AMPER priority levels: 2^bits")
    amper_k: int = Field(4, ge=1, description="AMPER-k: nearest rows per search")
    amper_radius: int = Field(1, ge=0, description="AMPER-fr: search radius in levels")
    amper_max_per_search: int = Field(16, ge=1, description="AMPER-fr: CSP rows per search")
    amper_target: Literal["proportional", "uniform"] = "proportional"
    amper_targets_per_item: float = Field(1.0, gt=0, description="AMPER: searches' targets "
                                          "per sampled item")


#: Per-env run lengths. The shared defaults above learn both tasks (seeds 0-7 on CartPole
#: pass a 20-episode mean of 150 by ~7k steps; seeds 0-3 on Acrobot pass -100 by ~24k).
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "CartPole-v1": dict(steps=30_000),
    "Acrobot-v1": dict(steps=50_000),
}
GENERIC_DEFAULTS: dict[str, Any] = dict(steps=50_000)
#: Atari: Mnih et al. (2015)'s batch 32, update every 4 steps and lr (Adam's 1e-4 as in
#: Dopamine), scaled down to a capture of a few thousand steps: a 5,000-transition buffer
#: of uint8 frame stacks (282 MB), updates from step 1,000, a target copy every 1,000.
ATARI_DEFAULTS: dict[str, Any] = dict(
    steps=5_000, batch_size=32, learn_every=4, lr=1e-4, buffer_size=5_000,
    learning_starts=1_000, target_sync=1_000, eps_decay_steps=5_000, loss="huber")
_FIXED = ("env_id", "steps", "seed", "replay")  # set by CaptureConfig, not by options


def config_for(cfg: CaptureConfig) -> DQNConfig:
    """Per-env defaults, then the capture request, then its options. RldseError on bad input."""
    if atari.is_atari(cfg.env_id):
        atari.refuse_hidden("dqn", cfg.options)
        defaults = ATARI_DEFAULTS
    else:
        defaults = ENV_DEFAULTS.get(cfg.env_id, GENERIC_DEFAULTS)
    return base.workload_config(DQNConfig, "dqn", cfg, _FIXED, defaults, replay=cfg.replay)


def capture_request(dcfg: DQNConfig) -> CaptureConfig:
    """The capture request that runs ``dcfg`` (`config_for` of it gives ``dcfg`` back): its
    fields away from the defaults as options, for what takes a request (a learning run's
    price, rldse.sim.run_cost)."""
    return CaptureConfig(workload="dqn", env_id=dcfg.env_id, steps=dcfg.steps,
                         seed=dcfg.seed, replay=dcfg.replay,
                         options=dcfg.model_dump(exclude=set(_FIXED), exclude_defaults=True))


def make_env(env_id: str) -> gym.Env:
    """An Atari env with the standard preprocessing (common/atari.py), or a gymnasium env
    with a flat Box observation and Discrete actions; RldseError otherwise."""
    if atari.is_atari(env_id):
        return atari.make_env(env_id)
    return base.make_env(env_id, "dqn", "discrete")


def make_replay(cfg: DQNConfig, obs_dim: int, rng: np.random.Generator,
                obs_dtype: type = np.float32) -> UniformReplay:
    """The replay ``cfg.replay`` names, holding observations of ``obs_dim`` numbers."""
    if cfg.replay == "per":
        return PrioritizedReplay(cfg.buffer_size, obs_dim, rng, obs_dtype, alpha=cfg.per_alpha,
                                 eps=cfg.per_eps)
    if cfg.replay in ("amper_k", "amper_fr"):
        return AmperReplay(
            cfg.buffer_size, obs_dim, rng, obs_dtype, variant=cfg.replay.removeprefix("amper_"),
            alpha=cfg.per_alpha, eps=cfg.per_eps, bits=cfg.amper_bits, k=cfg.amper_k,
            radius=cfg.amper_radius, max_per_search=cfg.amper_max_per_search,
            target=cfg.amper_target, targets_per_item=cfg.amper_targets_per_item)
    return UniformReplay(cfg.buffer_size, obs_dim, rng, obs_dtype)


class DQNAgent:
    """Online and target Q-networks, their optimizer and the replay buffer."""

    def __init__(self, cfg: DQNConfig, obs_dim: int, n_actions: int,
                 rng: np.random.Generator) -> None:
        self.cfg, self.rng, self.n_actions = cfg, rng, n_actions
        self.sizes = [obs_dim, *cfg.hidden, n_actions]
        self.online = MLP(self.sizes, rng)
        self.target = MLP(self.sizes, rng)
        self.target.copy_from(self.online)
        self.opt = Adam(self.online.params, lr=cfg.lr)
        self.replay = make_replay(cfg, obs_dim, rng)
        self.n_params = self.online.n_params
        self.act_work = forward_work(self.sizes, 1)
        self.learn_work = learn_work(self.sizes, cfg.batch_size, cfg.double,
                                     cfg.replay != "uniform")
        self.sync_work = copy_work(self.n_params)
        self._rows = np.arange(cfg.batch_size)

    def epsilon(self, step: int) -> float:
        frac = min(1.0, step / self.cfg.eps_decay_steps)
        return self.cfg.eps_start + frac * (self.cfg.eps_end - self.cfg.eps_start)

    def beta(self, step: int) -> float:
        """PER and AMPER importance exponent, annealed linearly from per_beta0 to 1."""
        frac = min(1.0, step / self.cfg.steps)
        return self.cfg.per_beta0 + frac * (1.0 - self.cfg.per_beta0)

    def act(self, obs: np.ndarray, step: int) -> tuple[int, bool]:
        """Epsilon-greedy action, and whether the network was evaluated for it."""
        if self.rng.random() < self.epsilon(step):
            return int(self.rng.integers(self.n_actions)), False
        return int(np.argmax(self.online(obs[None])[0])), True

    def learn(self, b: Batch) -> np.ndarray:
        """One gradient step on the TD loss; returns the TD errors (for PER)."""
        q, acts = self.online.forward(b.obs)
        q_next = self.target(b.next_obs)
        if self.cfg.double:
            best = np.argmax(self.online(b.next_obs), axis=1)
            v_next = q_next[self._rows, best]
        else:
            v_next = q_next.max(axis=1)
        y = b.reward + self.cfg.gamma * (1.0 - b.done) * v_next
        td = q[self._rows, b.action] - y
        grad = np.clip(td, -1.0, 1.0) if self.cfg.loss == "huber" else td
        if b.weights is not None:
            grad = grad * b.weights
        dq = np.zeros_like(q)
        dq[self._rows, b.action] = grad / len(td)
        grads, _ = self.online.backward(acts, dq)
        self.opt.step(grads)
        return td

    def sync(self) -> None:
        self.target.copy_from(self.online)

    # ---- the OffPolicyAgent protocol of loop.py -----------------------------------

    def remember(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
                 terminated: bool) -> OpWork:
        return self.replay.add(obs, action, reward, next_obs, terminated)

    def update(self, step: int, rec: Recorder | NullRecorder) -> None:
        """One learner update: sample, gradient step and (PER, AMPER) re-prioritisation."""
        now, add, replay, bs = rec.now, rec.add, self.replay, self.cfg.batch_size
        per, learn_w = self.cfg.replay != "uniform", self.learn_work
        t0 = now()
        if per:
            batch, w = replay.sample(bs, self.beta(step))
        else:
            batch, w = replay.sample(bs)
        add("replay_sample", t0, step, items=bs, work=w, dtype=replay.dtype)

        t0 = now()
        td = self.learn(batch)
        add("learn", t0, step, items=bs, work=learn_w)

        if per:
            t0 = now()
            w = replay.update(batch.idx, td)
            add("replay_update", t0, step, items=bs, work=w, dtype=replay.dtype)

    def end_step(self, step: int, rec: Recorder | NullRecorder) -> None:
        """Every ``target_sync`` env steps (not at step 0): the hard target copy."""
        if step % self.cfg.target_sync == 0 and step > 0:
            t0 = rec.now()
            self.sync()
            rec.add("sync", t0, step, items=1, work=self.sync_work, dtype="none")


class CNNDQNAgent(DQNAgent):
    """Atari: online and target Nature-CNNs in PyTorch (one CPU thread) with Adam, replay
    of flattened uint8 frame stacks; the loop protocol is DQNAgent's."""

    def __init__(self, cfg: DQNConfig, n_actions: int, rng: np.random.Generator) -> None:
        import torch

        torch.set_num_threads(1)  # one core, as the numpy loop
        torch.manual_seed(int(rng.integers(2**31)))
        self.torch, self.cfg, self.rng, self.n_actions = torch, cfg, rng, n_actions
        self.heads = (n_actions,)
        self.online = atari.torch_network(self.heads)
        self.target = atari.torch_network(self.heads)
        self.target.load_state_dict(self.online.state_dict())
        self.opt = torch.optim.Adam(self.online.parameters(), lr=cfg.lr, eps=1.5e-4)
        self.replay = make_replay(cfg, nature_cnn.OBS_BYTES, rng, np.uint8)
        self.n_params = nature_cnn.n_params(self.heads)
        self.sizes = cnn_stand_in(n_actions)
        self.act_work = nature_cnn.forward_work(1, self.heads)
        self.learn_work = cnn_learn_work(n_actions, cfg.batch_size, cfg.double,
                                         cfg.replay != "uniform")
        self.sync_work = copy_work(self.n_params)
        self._rows = np.arange(cfg.batch_size)

    def act(self, obs: np.ndarray, step: int) -> tuple[int, bool]:
        if self.rng.random() < self.epsilon(step):
            return int(self.rng.integers(self.n_actions)), False
        with self.torch.no_grad():
            q = self.online(self.torch.from_numpy(np.asarray(obs)[None]))[0]
        return int(q.argmax(1)[0]), True

    def remember(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
                 terminated: bool) -> OpWork:
        return self.replay.add(np.asarray(obs).reshape(-1), action, reward,
                               np.asarray(next_obs).reshape(-1), terminated)

    def learn(self, b: Batch) -> np.ndarray:
        """One gradient step on the TD loss (autograd); returns the TD errors (for PER)."""
        torch, cfg = self.torch, self.cfg
        obs = torch.from_numpy(b.obs.reshape(-1, *nature_cnn.OBS_SHAPE))
        next_obs = torch.from_numpy(b.next_obs.reshape(-1, *nature_cnn.OBS_SHAPE))
        act = torch.from_numpy(b.action.astype(np.int64))[:, None]
        q = self.online(obs)[0].gather(1, act)[:, 0]
        with torch.no_grad():
            q_next = self.target(next_obs)[0]
            if cfg.double:
                v_next = q_next.gather(1, self.online(next_obs)[0].argmax(1, keepdim=True))[:, 0]
            else:
                v_next = q_next.max(1).values
            y = (torch.from_numpy(b.reward.astype(np.float32)) + cfg.gamma
                 * (1.0 - torch.from_numpy(b.done.astype(np.float32))) * v_next)
        td = q - y
        per = (torch.nn.functional.huber_loss(q, y, reduction="none", delta=1.0)
               if cfg.loss == "huber" else td ** 2 / 2)
        if b.weights is not None:
            per = per * torch.from_numpy(b.weights.astype(np.float32))
        self.opt.zero_grad()
        per.mean().backward()
        self.opt.step()
        return td.detach().numpy()

    def sync(self) -> None:
        self.target.load_state_dict(self.online.state_dict())


def cnn_stand_in(n_actions: int) -> list[int]:
    """``layer_sizes`` of a Nature-CNN trace: an observation of float32 words holding the
    uint8 frame stack's bytes, the torso's features, the actions (what obs_dim and
    n_actions read; the program costs the network itself from ``network``)."""
    return [nature_cnn.OBS_BYTES // F32, nature_cnn.FEATURES, n_actions]


def cnn_learn_work(n_actions: int, batch: int, double: bool, weighted: bool = False) -> Work:
    """learn_work with the Nature-CNN (rldse.kernels.nature_cnn) in place of the MLP."""
    return net_learn_work(nature_cnn.network((n_actions,)), batch, double, weighted)


def learn_work(sizes: list[int], batch: int, double: bool, weighted: bool = False) -> Work:
    """learn_work of the numpy MLP of ``sizes`` (mlp.network)."""
    return net_learn_work(network(sizes), batch, double, weighted)


def net_learn_work(net: NetworkWork, batch: int, double: bool, weighted: bool = False) -> Work:
    """Work of one update of Q-network ``net``: forwards on s and s' (twice for double),
    backward, Adam, the TD target and loss kernels (``td_work``) and the cold state
    (mlp.cold) of the online and target networks."""
    fwd = net.forward(batch)
    work = (fwd + fwd + net.backward(batch)
            + adam_work(net.n_params, net.n_tensors)
            + td_work(batch, net.layers[-1].outputs, double, weighted)
            + cold(net.n_params, 2))
    return work + fwd if double else work


def td_work(batch: int, n_actions: int, double: bool, weighted: bool) -> Work:
    """The kernels of `DQNAgent.learn` besides the networks, per sample (A actions),
    bytes read + written as the numpy calls run them: max over actions (4·A + 4); 1 − done
    (1 + 8, float64 from here on); · γ (16); · v' (20); r + (20); the gather q[rows, a]
    (8 + 4 + 4 + 4); − y (20); zeros_like(q) (4·A); / B (16); the scatter into dq
    (8 + 4 + 8 + 4): 8·A + 149 bytes, A + 6 flops, 11 calls. Double DQN adds the argmax
    (4·A + 8) and its gather (24); PER weights multiply (20)."""
    per_bytes, per_flops, calls = 8 * n_actions + 149, n_actions + 6, 11
    if double:
        per_bytes, calls = per_bytes + 4 * n_actions + 32, calls + 2
    if weighted:
        per_bytes, per_flops, calls = per_bytes + 20, per_flops + 1, calls + 1
    return elementwise(batch * per_flops, batch * per_bytes, calls)


def train(cfg: DQNConfig, rec: Recorder | NullRecorder | None = None,
          progress: Progress = no_progress) -> tuple[list[float], DQNAgent]:
    """DQN for cfg.steps env steps on loop.py's loop, each operation recorded into ``rec``:
    the completed episodes' returns and the trained agent."""
    def agent(env: gym.Env, rng: np.random.Generator) -> DQNAgent:
        if atari.is_atari(cfg.env_id):
            return CNNDQNAgent(cfg, int(env.action_space.n), rng)
        return DQNAgent(cfg, env.observation_space.shape[0], int(env.action_space.n), rng)

    return train_offpolicy(make_env(cfg.env_id), agent, cfg.seed, cfg.steps,
                           cfg.learning_starts, cfg.learn_every, rec, progress)


def workload_info(agent: DQNAgent) -> dict[str, Any]:
    """Shapes and schedule a simulator needs to replay this run."""
    cfg, replay = agent.cfg, agent.replay
    return {
        "obs_dim": agent.sizes[0],
        "n_actions": agent.n_actions,
        "layer_sizes": agent.sizes,
        "n_params": agent.n_params,
        "batch_size": cfg.batch_size,
        "replay": cfg.replay,
        "replay_capacity": replay.capacity,
        "learning_starts": cfg.learning_starts,
        "learn_every": cfg.learn_every,
        "target_sync": cfg.target_sync,
        "double": cfg.double,
        "obs_dtype": str(replay.obs.dtype),
        "transition_bytes": replay.transition_bytes,
        "sum_tree_depth": replay.tree.depth if isinstance(replay, PrioritizedReplay) else 0,
        "amper": amper_info(replay) if isinstance(replay, AmperReplay) else None,
        **({"network": nature_cnn.network_info(agent.heads)} if isinstance(agent, CNNDQNAgent)
           else {}),
    }


def amper_info(replay: AmperReplay) -> dict[str, Any]:
    """AMPER's design and its measured AM work per item (what the simulated TCAM costs)."""
    st = replay.stats
    return {"variant": replay.variant, "bits": replay.bits, "k": replay.k,
            "radius": replay.radius, "max_per_search": replay.max_per_search,
            "target": replay.target, "targets_per_item": replay.targets_per_item,
            "searches": st.searches, "candidates": st.candidates, "sampled": st.sampled,
            "insert_rows": st.insert_rows, "update_items": st.update_items,
            "update_rows": st.update_rows, "rescale_rows": st.rescale_rows,
            **st.per_item()}


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Train DQN as ``cfg`` asks, recording every operation, and return the Trace."""
    return capture_config(config_for(cfg), progress)


Config = DQNConfig  # the capture options (rldse.workloads.Workload.config)

ALGORITHMS = {"uniform": "dqn", "per": "dqn_per", "amper_k": "dqn_amper_k",
              "amper_fr": "dqn_amper_fr"}


def capture_config(dcfg: DQNConfig, progress: Progress = no_progress) -> Trace:
    """Train DQN with an explicit DQNConfig (e.g. AMPER replay), recording every operation."""
    amper_keys = {k for k in DQNConfig.model_fields if k.startswith("amper_")}
    return capture_trace(train, dcfg, progress, workload="dqn",
                         algorithm=ALGORITHMS[dcfg.replay], info=workload_info,
                         exclude=() if dcfg.replay.startswith("amper") else amper_keys)
