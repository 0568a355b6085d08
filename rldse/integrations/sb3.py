"""Stable-Baselines3: ``model.learn(N, callback=RldseCallback("run.parquet"))`` records the
run as a Trace (rldse.recording), with no other change to the user's code.

At ``_on_training_start`` the callback wraps a few of the model's methods (instance
attributes, restored at ``_on_training_end``) and tiles the loop's time into phases, so
that the trace holds the whole loop, SB3's own bookkeeping included. Each boundary
between tiles is one cut (rldse.recording.cuts: one clock read, two list appends), made
inline in the wrappers that run every step: in situ, where the loop's own work leaves the
interpreter's caches and branch predictors cold, a method call costs as much as the cut
itself (``benchmarks/speed/sb3_recorder_overhead.py``):

- off-policy (DQN, SAC; ``dqn`` or ``ddpg`` program): ``act`` is ``_sample_action``
  (flops 0 when it sampled the action space instead of running the network: warm-up and
  epsilon-greedy random actions);
  ``env_step`` runs from its end to the next action or the rollout's end: the vector
  env's step (episode resets included: SB3 resets inside it) and the loop's bookkeeping
  (callbacks, info buffer, exploration schedule, DQN's target copy, logging), less
  ``replay_add`` (``_store_transition``); ``learn`` is ``train()`` less its
  ``replay_sample`` (``replay_buffer.sample``).
- on-policy (PPO, A2C; ``actor_learner`` program, worker ``actor/0`` and ``learner``):
  ``act`` is the policy's forward, and the bootstrap ``predict_values`` at a rollout's
  end; ``env_step`` runs from an action to the next (stepping and ``rollout_buffer.add``,
  as the built-in PPO's env_step stores its transition); ``rollout_add`` from the
  bootstrap to the first minibatch (GAE, the learn loop, the buffer's flattening): the
  handoff the program books on the learner; each ``learn`` ends at an optimizer step and
  starts at the previous one's end (the minibatch gather included); ``sync`` runs from an
  iteration's last optimizer step to the next rollout's first action (logging, mode
  switches, the buffer's reset): the program's parameter hand-back.

Episode ends come from SB3's Monitor (``info["episode"]``): an empty ``env_reset`` phase
marks each (the reset's own time is inside ``env_step``) and the return goes to the learning curve.
"""

from __future__ import annotations

from pathlib import Path
from time import perf_counter_ns
from typing import Any

from rldse.errors import RldseError

try:
    import torch
    from stable_baselines3 import A2C, DQN, PPO, SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
except ImportError as exc:  # the extra is absent
    raise RldseError(f"rldse.integrations.sb3 needs stable-baselines3 and torch ({exc.name} "
                     "is missing): pip install 'rldse[sb3]'") from None

from rldse.recording.cuts import GAP
from rldse.recording.session import Recording
from rldse.threads import CAPTURE_TORCH_THREADS, TorchThreads

#: Algorithms whose loops the callback knows, by class.
SUPPORTED = (PPO, A2C, DQN, SAC)


class RldseCallback(BaseCallback):
    """Record ``model.learn`` into the trace file ``path`` (written when training ends)."""

    def __init__(self, path: str | Path, seed: int | None = None, verbose: int = 0,
                 force: bool = False,
                 torch_threads: int | None = CAPTURE_TORCH_THREADS) -> None:
        """``torch_threads``: torch's intra-op threads while training is recorded (the
        trace records the count; None leaves torch's own)."""
        super().__init__(verbose)
        self.threads = TorchThreads(torch_threads, where="RldseCallback: torch_threads")
        self.path = Path(path)
        if self.path.suffix != ".parquet":
            raise RldseError(f"{self.path}: a trace file must end in .parquet",
                             where="RldseCallback: path")
        if self.path.exists() and not force:  # refused before training, as the CLI does
            raise RldseError(f"{self.path}: exists (pass force=True to overwrite it)",
                             where="RldseCallback: path")
        self.seed = seed
        self.rec: Recording | None = None
        self._restore: list[tuple[Any, str]] = []

    # ---- SB3 hooks -----------------------------------------------------------------
    def _on_training_start(self) -> None:
        model = self.model
        if not isinstance(model, SUPPORTED):
            raise RldseError(f"{type(model).__name__} is not supported (RldseCallback "
                             f"records {', '.join(c.__name__ for c in SUPPORTED)})",
                             where="RldseCallback")
        on_policy = isinstance(model, OnPolicyAlgorithm)
        network, hyper = _on_policy(model) if on_policy else _off_policy(model)
        seed = self.seed if self.seed is not None else int(model.seed or 0)
        self.rec = rec = Recording(self.path, loop="on_policy" if on_policy else "off_policy",
                                   env_id=_env_id(model), network=network, seed=seed,
                                   algorithm=type(model).__name__.lower(), **hyper)
        self.cuts = rec.cuts
        self._reset_code = rec.kind("env_reset", items=1)
        self._off_policy = not on_policy
        env_step = rec.kind("env_step")
        if on_policy:
            rollout_add = rec.kind("rollout_add", items=model.n_steps * model.n_envs,
                                   dtype="none")
            self._wrap(model.policy, "forward", self._act(rec.kind("act"), env_step))
            self._wrap(model.policy, "predict_values", self._predict_values(rollout_add))
            self._wrap(model.policy, "evaluate_actions", self._evaluate_actions(rollout_add))
            self._wrap(model.policy.optimizer, "step", self._optimizer_step)
            self.cuts.cut(rec.kind("sync", items=1))
        else:  # a random act (warm-up, epsilon-greedy) samples the action space: no network
            act = rec.kind("act")
            self._wrap(model.action_space, "sample", self._mark_random(
                act, rec.kind("act", flops=0, bytes=0, dtype="none")))
            self._wrap(model, "_sample_action", self._act(act, env_step))
            self._wrap(model, "_store_transition", self._nested(rec.kind("replay_add")))
            self._wrap(model, "train", self._train)
            self._wrap(model.replay_buffer, "sample", self._nested(rec.kind("replay_sample")))
        # the run's first reset (done by SB3 before training): starts the curve
        self._empty_row(rec.kind("env_reset", items=model.n_envs))
        self.threads.start()  # last: nothing above failed, so _on_training_end restores it

    def _on_rollout_start(self) -> None:
        """On-policy: the tile open since the last optimizer step (logging, mode switches,
        the buffer's reset; until the first act) was the parameter hand-back, a sync."""
        if not self._off_policy and self.cuts.open_code() == self.rec.kind("learn"):
            self.cuts.relabel(self.cuts.open, self.rec.kind("sync", items=1))

    def _on_step(self) -> bool:
        t = perf_counter_ns()  # the hot paths cut inline, without the CPU clock's check
        if t >= self.cuts.cpu.next_ns:
            self.cuts.cpu.sample(t)
        for info in self.locals.get("infos", ()):
            episode = info.get("episode")
            if episode is not None:  # an empty env_reset row inside the step ends it
                self._empty_row(self._reset_code)
                self.rec.episode(float(episode["r"]))
        return True

    def _on_rollout_end(self) -> None:
        if self._off_policy and self.cuts.open is not None:
            self.cuts.gap()

    def _on_training_end(self) -> None:
        if self.cuts.open is not None:  # after the last update: nothing the program replays
            self.cuts.relabel(self.cuts.open, GAP)
            self.cuts.gap()
        self.rec.stop()
        self.rec.torch_threads = self.threads.stop()
        for obj, name in reversed(self._restore):
            delattr(obj, name)
        self._restore.clear()
        self.rec.save()

    # ---- tiles: one cut per boundary (rldse.recording.cuts) ---------------------------
    def _empty_row(self, code: int) -> None:
        """A row of kind ``code`` with no time, inside the open one."""
        parent = self.cuts.open
        self.cuts.cut(code)
        self.cuts.back(parent)

    def _wrap(self, obj: Any, name: str, make) -> None:
        if name in vars(obj):
            raise RldseError(f"{type(obj).__name__}.{name} is already replaced on this "
                             "object (another recorder?)", where="RldseCallback")
        setattr(obj, name, make(getattr(obj, name)))
        self._restore.append((obj, name))

    def _mark_random(self, act: int, act_random: int):
        """A sampled action inside an act makes it a random one (flops and bytes 0)."""
        cuts = self.cuts

        def make(orig):
            def wrapped(*a, **k):
                if cuts.open_code() == act:
                    cuts.relabel(cuts.open, act_random)
                return orig(*a, **k)
            return wrapped
        return make

    def _nested(self, code: int):
        """A wrapper maker: each call is a row of kind ``code`` inside the open one (cut
        inline, Cuts' docstring)."""
        cuts = self.cuts
        codes, clock, log = cuts.codes, cuts.times.append, cuts.codes.append

        def make(orig):
            def wrapped(*a, **k):
                parent = cuts.open
                cuts.open = cuts.base + len(codes)
                clock(perf_counter_ns())
                log(code)
                result = orig(*a, **k)  # an exception ends training: no row needed
                cuts.open = parent
                clock(perf_counter_ns())
                log(GAP if parent is None else -parent - 1)
                return result
            return wrapped
        return make

    def _act(self, act: int, env_step: int):
        """A wrapper maker for the step's action (off-policy: ``_sample_action``,
        on-policy: the policy's forward): an act row around it, then the env step's (cut
        inline, spilling first: once a step bounds the lists; Cuts' docstring)."""
        cuts = self.cuts
        codes, clock, log = cuts.codes, cuts.times.append, cuts.codes.append

        def make(orig):
            def wrapped(*a, **k):
                if len(codes) >= cuts.spill_at:
                    cuts.spill()
                cuts.open = cuts.base + len(codes)  # (off-policy) _mark_random relabels it
                clock(perf_counter_ns())
                log(act)
                result = orig(*a, **k)
                cuts.open = cuts.base + len(codes)  # (off-policy) the store nests in it
                clock(perf_counter_ns())
                log(env_step)
                return result
            return wrapped
        return make

    # ---- off-policy ------------------------------------------------------------------
    def _train(self, orig):
        """A learn row around the update (cut inline; replay_sample nests in it)."""
        flops, nbytes = _learn_work(self.model, self.rec)
        cuts, code = self.cuts, self.rec.kind("learn", flops=flops, bytes=nbytes)
        codes, clock, log = cuts.codes, cuts.times.append, cuts.codes.append

        def wrapped(*a, **k):
            cuts.open = cuts.base + len(codes)
            clock(perf_counter_ns())
            log(code)
            result = orig(*a, **k)
            cuts.open = None
            clock(perf_counter_ns())
            log(GAP)
            return result
        return wrapped

    # ---- on-policy -------------------------------------------------------------------
    def _predict_values(self, rollout_add: int):
        """The bootstrap value at a rollout's end is an act row; the handoff follows."""
        buffer, cuts = self.model.rollout_buffer, self.cuts
        work = self.rec.net_work("value", self.model.n_envs, backward=False)
        value = self.rec.kind("act", flops=work[0], bytes=work[1])

        def make(orig):
            def wrapped(*a, **k):
                if not buffer.full:  # a truncated episode's value (before the step's add),
                    return orig(*a, **k)  # inside the step's bookkeeping
                cuts.cut(value)
                result = orig(*a, **k)
                cuts.cut(rollout_add)
                return result
            return wrapped
        return make

    def _evaluate_actions(self, rollout_add: int):
        """The first minibatch's evaluation ends the handoff: learning starts."""
        cuts, learn = self.cuts, self.rec.kind("learn")

        def make(orig):
            def wrapped(*a, **k):
                if cuts.open_code() == rollout_add:
                    cuts.cut(learn)
                return orig(*a, **k)
            return wrapped
        return make

    def _optimizer_step(self, orig):
        cuts, learn = self.cuts, self.rec.kind("learn")

        def wrapped(*a, **k):
            result = orig(*a, **k)
            cuts.cut(learn)
            return result
        return wrapped


def _env_id(model) -> str:
    """The gymnasium id of the first env under SB3's wrappers ('unknown' if not made by id)."""
    try:
        spec = model.get_env().envs[0].unwrapped.spec
    except (AttributeError, IndexError):
        spec = None
    return spec.id if spec is not None else "unknown"


def _linear(*parts) -> torch.nn.Sequential:
    """The Linear (and activation) modules of ``parts`` as one chain, sharing parameters."""
    mods = []
    for part in parts:
        mods.extend(part if isinstance(part, torch.nn.Sequential) else [part])
    return torch.nn.Sequential(*mods)


def _gradient_steps(model) -> int:
    g = model.gradient_steps if model.gradient_steps > 0 else model.train_freq.frequency
    freq = model.train_freq.frequency
    if g != 1 or model.train_freq.unit.value != "step":
        raise RldseError(f"gradient_steps={model.gradient_steps} with train_freq={freq} "
                         f"{model.train_freq.unit.value}: the off-policy program replays one "
                         "update every learn_every env steps (use gradient_steps=1 and a "
                         "train_freq in steps)", where="RldseCallback")
    return freq


def _off_policy(model) -> tuple[Any, dict[str, Any]]:
    obs_shape = model.observation_space.shape
    hyper = {"batch_size": model.batch_size, "replay_capacity": model.buffer_size,
             "learning_starts": model.learning_starts, "learn_every": _gradient_steps(model),
             "n_envs": model.n_envs, "gamma": model.gamma,
             "learning_rate": float(model.lr_schedule(1.0))}
    if isinstance(model, DQN):
        hyper["target_sync"] = model.target_update_interval
        return _linear(model.q_net.features_extractor, model.q_net.q_net), {
            "obs_shape": obs_shape, **hyper}
    actor, critic = model.policy.actor, model.policy.critic
    hyper["tau"] = model.tau
    return {"actor": _linear(actor.latent_pi, actor.mu),
            "critic": _linear(critic.q_networks[0])}, {"obs_shape": obs_shape, **hyper}


def _on_policy(model) -> tuple[Any, dict[str, Any]]:
    policy = model.policy
    ext = policy.mlp_extractor
    batch = getattr(model, "batch_size", None) or model.n_steps * model.n_envs  # A2C: all
    return ({"policy": _linear(ext.policy_net, policy.action_net),
             "value": _linear(ext.value_net, policy.value_net)},
            {"obs_shape": model.observation_space.shape, "rollout_len": model.n_steps,
             "envs_per_actor": model.n_envs, "minibatch_size": batch,
             "epochs": getattr(model, "n_epochs", 1), "gamma": model.gamma,
             "learning_rate": float(model.lr_schedule(1.0))})


def _learn_work(model, rec: Recording) -> tuple[int, int]:
    """One update's work: the trained networks' forward, backward and Adam step, plus
    DQN's target forward at the batch (SAC: first order, as rec.work counts it)."""
    flops, nbytes = rec.work("learn", model.batch_size)
    if isinstance(model, DQN):
        f, b = rec.net_work("q", model.batch_size, backward=False)
        flops, nbytes = flops + f, nbytes + b
    return flops, nbytes
