"""`rldse capture script`: run a user's single-file PyTorch training script, unedited, and
record it as a trace (CleanRL-style scripts: gymnasium vector envs or gymnasium.make,
nn.Modules, an optimizer; replay storage as below).

The script runs as ``__main__`` (runpy) with these hooked for its length, then restored:
gymnasium's ``SyncVectorEnv``/``AsyncVectorEnv`` ``step`` and ``reset`` (and the step of
envs from ``gymnasium.make``), module forwards (torch's global forward hooks; only the
outermost module call counts), ``Tensor.backward``, optimizer steps (torch's global
optimizer hooks), target copies (``sync``): ``nn.Module.load_state_dict`` and in-place
writes to a network's parameters outside an optimizer step (PARAM_WRITES: CleanRL's
``param.data.copy_``, Polyak updates), and replay storage (REPLAY_CLASSES): SB3's and
TorchRL's replay buffers, any class the script (or a module beside it) defines with a
``sample`` method and an add-like one (ADD_METHODS), or one the user names (``--replay
CLASS``), seen as it is defined (``__build_class__``), ``random.sample`` from a list or
deque, and ``np.random.randint``/``choice`` drawing a batch of indices into the script's
own arrays (a list's appends and an array's writes are too cheap to hook, so their
``replay_add`` rows are written with no duration, named in
``hyperparameters['inferred']``). Each hooked call is timed on ``perf_counter_ns`` with
the hook's own bias, calibrated on a no-op, removed (RL-Scope's calibration, Gleeson et
al., MLSys 2021). Code outside the hooks (logging, GAE, bookkeeping) is not recorded. The
trace's wall time runs from the first hooked call to the script's end: the set-up before
it (imports, envs, networks) is not the loop; the whole script's is
``hyperparameters['script_wall_s']``.
What the run learned is kept: its episode returns (rldse.recording.episodes; a vector
env's episode ends are ``env_reset`` rows of no duration at the step's end, where
learning_curve places them), its seed (its first env reset's, unless ``--seed`` gives
one; ``hyperparameters['seed_from']``) and its arguments (``script_args``, and the first
argparse namespace it parsed, ``script_options``).
torch runs on CAPTURE_TORCH_THREADS intra-op threads unless ``--torch-threads`` says
otherwise; the trace's host load records the count and who chose it.

Phases, per gap between two env steps: every optimizer step closes one ``learn`` row that
starts at the first forward or backward after the previous one (its forwards, backward and
step; a backward with no forward of its own, REINFORCE's, trains the grad-enabled forwards
the acts made since the last step: they are its batch); forwards after the gap's last
optimizer step are the next ``act``. In an off-policy loop a gap's optimizer steps are one
``learn`` (one update: SAC's critics, actor and temperature), and an env step with no
forward before it explored (an epsilon-random or warm-up action): an ``act`` of no
duration and no work, which the program keeps on the actor's core. The loop kind is
inferred (``off_policy``: replay storage was used; ``on_policy`` otherwise) unless given. An on-policy script runs in one
process: its ``rollout_add`` and ``sync`` rows, which the actor-learner program reads, are
written with zero duration at each iteration's end and start. Its networks are the modules
its learn steps trained: a policy and a one-output value module on the observations, or
else every trained module described as one network (a policy alone, REINFORCE's; a
shared actor-critic body).

Work counts and the program's typed Info come from rldse.recording's own pieces
(``network.Network``: FLOPs by torch's counter; ``info.workload_info``; ``loops``), so a
script's trace and a ``rldse.recording`` trace are built the same way. Schedule numbers
the program needs are read from what ran: batch (the learning forward's), warm-up and
update and target-copy intervals (env steps), replay capacity (the buffer's, or, without
one, every transition the run made, named in ``hyperparameters['inferred']``).

Nothing of a finished run is lost: when its trace cannot be made or written, the raw
record (every hooked call's times, the modules' descriptions, the run's context) is
written beside the output (RAW_SUFFIX) and the one-line error names it.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import random
import runpy
import statistics
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import perf_counter, perf_counter_ns, process_time_ns
from typing import Any

import numpy as np

from rldse.cpu_clock import CpuClock
from rldse.errors import RldseError
from rldse.host import load_sample
from rldse.recording import replay_storage
from rldse.recording.episodes import Episodes
from rldse.recording.replay_storage import ADD_METHODS, REPLAY_CLASSES, parse_replay
from rldse.threads import CAPTURE_TORCH_THREADS, TorchThreads
from rldse.trace import Trace, operator_records

_CALIBRATION_CALLS = 2000
#: In-place tensor methods that write a target network's parameters (_watch_param_writes)
PARAM_WRITES = ("copy_", "lerp_", "mul_", "add_")
LOOPS = ("off_policy", "on_policy")
#: The raw record of a run whose trace was not written (or whose script raised): OUT's
#: name with this suffix.
RAW_SUFFIX = ".raw.parquet"


@dataclass
class _Event:
    kind: str  # env_step, env_reset, forward, backward, opt, replay_add, replay_sample, sync
    t0: int
    dur: int
    items: int = 1
    module: Any = None
    grad: bool = False
    shape: tuple[int, ...] = ()
    #: a plain-array buffer's sample: it lasts until the next hooked call (_reach_next)
    reaches_next: bool = False


@dataclass
class _Hooks:
    """Installs the hooks, collects events, removes everything it installed."""

    events: list[_Event] = field(default_factory=list)
    undo: list[Any] = field(default_factory=list)
    depth: int = 0  # inside a hooked call: nested ones are part of it
    replay_capacity: int | None = None
    env_ids: list[str] = field(default_factory=list)
    fwd: list[tuple[int, Any]] = field(default_factory=list)
    #: process CPU time (torch may run the script's ops on several threads), read at most
    #: once per rldse.cpu_clock.SAMPLE_EVERY_NS at a timed call's end
    cpu: CpuClock = field(default_factory=lambda: CpuClock(process_time_ns))
    load_start: tuple[float, int] | None = None
    folder: Path | None = None  # the script's: classes defined there may be replay buffers
    #: replay buffer classes the user named (--replay): name -> (add methods, sample
    #: method), or None to find them as for any class
    named: dict[str, tuple[tuple[str, ...], str] | None] = field(default_factory=dict)
    replay_classes: list[str] = field(default_factory=list)  # used, as module.Class
    list_replay: bool = False  # random.sample from a list or deque was seen
    array_replay: bool = False  # a batch of indices drawn into the script's own arrays
    episodes: Episodes = field(default_factory=Episodes)
    args: list[str] = field(default_factory=list)  # the script's command line
    seed: int | None = None  # the first env reset's seed
    options: dict[str, Any] = field(default_factory=dict)  # the script's parsed arguments
    #: data pointers of the parameters of every module that ran a forward: in-place writes
    #: to them outside an optimizer step are target copies (_watch_param_writes)
    param_ptrs: set[int] = field(default_factory=set)
    described: set[int] = field(default_factory=set)  # ids of modules whose ptrs are in
    last_write: _Event | None = None  # the sync row a run of parameter writes extends
    #: one sample's shape of each further tensor a module's forward took, by module id
    extra_inputs: dict[int, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    n_envs: int = 1  # the last vector step's envs
    torch_threads: tuple[int, str] | None = None  # rldse.threads.TorchThreads.stop
    script_wall_s: float = 0.0  # the whole script, its set-up included
    #: called with each env step's env count, after the step is recorded (a progress bar)
    on_env_steps: Callable[[int], None] | None = None

    # ---- timed wrappers -------------------------------------------------------------
    def timed(self, kind: str, fn, items_of=None, then=None):
        """``fn`` timed as a ``kind`` event of ``items_of(args, kwargs, out)`` items;
        ``then(out, event)`` after it is recorded."""
        hooks = self

        def wrapper(*args, **kwargs):
            if hooks.depth:
                return fn(*args, **kwargs)
            hooks.depth += 1
            t0 = perf_counter_ns()
            try:
                out = fn(*args, **kwargs)
            finally:
                t1 = perf_counter_ns()
                hooks.depth -= 1
                if t1 >= hooks.cpu.next_ns:  # the call ends after the read (cpu_clock)
                    t1 = hooks.cpu.sample(t1)
            event = _Event(kind, t0, t1 - t0, items_of(args, kwargs, out) if items_of else 1)
            hooks.events.append(event)
            if then is not None:
                then(out, event)
            return out

        wrapper.__wrapped__ = fn
        return wrapper

    def patch(self, owner: Any, name: str, kind: str, items_of=None, then=None) -> None:
        self.swap(owner, name, self.timed(kind, getattr(owner, name), items_of, then))

    def swap(self, owner: Any, name: str, new: Any) -> None:
        """Set ``owner.name`` to ``new`` until remove()."""
        own = isinstance(owner, type) and name in owner.__dict__
        original = owner.__dict__[name] if own else getattr(owner, name)
        setattr(owner, name, new)
        if own or not isinstance(owner, type):
            self.undo.append(lambda: setattr(owner, name, original))
        else:  # inherited: the subclass had none of its own
            self.undo.append(lambda: delattr(owner, name))

    def install(self) -> None:
        import gymnasium as gym
        import torch
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim

        def n_envs(args, kwargs, out) -> int:
            self.n_envs = int(getattr(args[0], "num_envs", 1))
            self.seen_seed(kwargs)
            if not self.env_ids:  # made by gymnasium.make_vec, say: its spec names it
                spec = getattr(args[0], "spec", None)
                if getattr(spec, "id", None):
                    self.env_ids.append(str(spec.id))
            return self.n_envs

        def episode_ends(out, step: _Event) -> None:
            """A vector env resets its envs inside the step whose episodes ended: an
            env_reset row of those envs, at the step's end (its time is the step's)."""
            ended = self.episodes.step(out)
            if ended:
                self.events.append(_Event("env_reset", step.t0 + step.dur, 0, ended))
            self.stepped(step.items)

        for cls in (gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv):
            self.patch(cls, "step", "env_step", n_envs, episode_ends)
            self.patch(cls, "reset", "env_reset", n_envs)
        original_make = gym.make

        def make(env_id, *args, **kwargs):
            env = original_make(env_id, *args, **kwargs)
            self.env_ids.append(str(getattr(env_id, "id", env_id)))
            # a single env's episodes end at the script's own reset calls
            env.step = self.timed("env_step", env.step, then=lambda out, step: (
                self.episodes.step(out), self.stepped(1)))
            env.reset = self.timed("env_reset", env.reset,
                                   lambda args, kwargs, out: self.seen_seed(kwargs))
            return env

        gym.make = make
        self.undo.append(lambda: setattr(gym, "make", original_make))
        self.patch(torch.Tensor, "backward", "backward")
        self.patch(torch.nn.Module, "load_state_dict", "sync")
        handles = [nn_module.register_module_forward_pre_hook(self._pre),
                   nn_module.register_module_forward_hook(self._post),
                   optim.register_optimizer_step_pre_hook(self._opt_pre),
                   optim.register_optimizer_step_post_hook(self._opt_post)]
        self.undo.extend(h.remove for h in handles)
        for (module, name), adds in REPLAY_CLASSES.items():  # those imported already
            cls = getattr(sys.modules.get(module), name, None)
            if isinstance(cls, type):
                self.hook_replay(cls, (*adds, "sample"))
        for name, spec in self.named.items():  # a library class named by its module path
            module, _, cls_name = name.rpartition(".")
            if module:
                cls = getattr(importlib.import_module(module), cls_name)
                self.hook_replay(cls, self._named_methods(cls, spec))
        self._watch_classes()
        self._watch_random_sample()
        self._watch_array_sample()
        self._watch_param_writes()
        self._watch_arguments()

    def stepped(self, n_envs: int) -> None:
        if self.on_env_steps is not None:
            self.on_env_steps(n_envs)

    def seen_seed(self, kwargs: dict) -> int:
        """Keep the first env reset's ``seed`` (the run's seed); 1 (the reset's items)."""
        seed = kwargs.get("seed")
        if isinstance(seed, (list, tuple)) and seed:
            seed = seed[0]
        if self.seed is None and isinstance(seed, (int, np.integer)) \
                and not isinstance(seed, bool):
            self.seed = int(seed)
        return 1

    def _watch_arguments(self) -> None:
        """The script's parsed arguments (argparse's, which tyro's parsers are too): the
        first namespace parsed while it runs, values that are not plain kept as text."""
        import argparse

        original, hooks = argparse.ArgumentParser.parse_known_args, self

        def parse_known_args(parser, *args, **kwargs):
            namespace, rest = original(parser, *args, **kwargs)
            if not hooks.options:
                hooks.options = {k: v if isinstance(v, (int, float, str, bool)) or v is None
                                 else repr(v) for k, v in vars(namespace).items()}
            return namespace, rest

        self.swap(argparse.ArgumentParser, "parse_known_args", parse_known_args)

    # ---- replay storage -------------------------------------------------------------
    def _watch_classes(self) -> None:
        """Hook replay buffer classes as they are defined (docs/architecture.md, "What is
        hooked")."""
        original = builtins.__build_class__

        def build_class(func, name, *bases, **kwargs):
            cls = original(func, name, *bases, **kwargs)
            if isinstance(cls, type):
                adds = self.replay_methods(cls, getattr(func, "__globals__", {}))
                if adds:
                    self.hook_replay(cls, adds)
            return cls

        builtins.__build_class__ = build_class
        self.undo.append(lambda: setattr(builtins, "__build_class__", original))

    def replay_methods(self, cls: type, module_globals: dict) -> tuple[str, ...]:
        """The add-like methods and, last, the sample method of ``cls`` if it is replay
        storage: a library buffer (REPLAY_CLASSES), a class the user named, or one defined
        beside the script with ``sample`` and an add-like method (not a rollout buffer);
        () if not."""
        module = str(module_globals.get("__name__", ""))
        if (module, cls.__name__) in REPLAY_CLASSES:
            return (*REPLAY_CLASSES[(module, cls.__name__)], "sample")
        key = next((k for k in (cls.__name__, f"{module}.{cls.__name__}")
                    if k in self.named), None)
        if key is not None:
            return self._named_methods(cls, self.named[key])
        adds = tuple(m for m in ADD_METHODS if callable(cls.__dict__.get(m)))
        if self.beside(module_globals.get("__file__")) and adds and callable(cls.__dict__.get("sample")) \
                and "rollout" not in cls.__name__.lower():
            return (*adds, "sample")
        return ()

    def beside(self, file: str | None) -> bool:
        """Whether source ``file`` is in the script's folder (the script's own code)."""
        return self.folder is not None and file is not None and \
            Path(file).resolve().parent == self.folder

    @staticmethod
    def _named_methods(cls: type, spec: tuple[tuple[str, ...], str] | None
                       ) -> tuple[str, ...]:
        """The methods of a class named by --replay: as named, or found by name."""
        adds, sample = spec or (tuple(m for m in ADD_METHODS if hasattr(cls, m)), "sample")
        if not adds or not all(callable(getattr(cls, m, None)) for m in (*adds, sample)):
            raise RldseError(f"--replay {cls.__name__}: the class has no "
                             f"{'/'.join(adds) or 'add'} or {sample} method (name them: "
                             "--replay CLASS:ADD,SAMPLE)")
        return (*adds, sample)

    def hook_replay(self, cls: type, methods: tuple[str, ...]) -> None:
        """Time ``methods`` of ``cls`` (replay_methods: add-like ones, then sample)."""
        hooks, label = self, f"{cls.__module__}.{cls.__qualname__}"

        def used() -> None:
            if label not in hooks.replay_classes:
                hooks.replay_classes.append(label)

        def add_items(args, kwargs, out) -> int:
            used()
            x = args[1] if len(args) > 1 else None
            shape = getattr(x, "shape", ())
            return hooks.n_envs if len(shape) >= 2 and shape[0] == hooks.n_envs else 1

        def sample_items(args, kwargs, out) -> int:
            used()
            hooks.replay_capacity = replay_storage.capacity(args[0])
            batch = kwargs.get("batch_size", args[1] if len(args) > 1 else None)
            if isinstance(batch, (int, np.integer)) and not isinstance(batch, bool):
                return int(batch)
            return replay_storage.batch_of(out)

        *adds, sample = methods
        for name in adds:
            if callable(getattr(cls, name, None)):
                self.patch(cls, name, "replay_add", add_items)
        self.patch(cls, sample, "replay_sample", sample_items)

    def _watch_random_sample(self) -> None:
        """``random.sample`` from a list or deque, called by code beside the script (not a
        library's): a list replay buffer's sample."""
        original, hooks = random.sample, self
        timed = self.timed("replay_sample", original, lambda a, k, o: len(o))

        def sample(population, *args, **kwargs):
            if isinstance(population, (list, deque)) and hooks.beside(
                    sys._getframe(1).f_code.co_filename):
                hooks.list_replay = True
                if isinstance(population, deque) and population.maxlen:
                    hooks.replay_capacity = int(population.maxlen)
                return timed(population, *args, **kwargs)
            return original(population, *args, **kwargs)

        random.sample = sample
        self.undo.append(lambda: setattr(random, "sample", original))

    def _watch_array_sample(self) -> None:
        """``np.random.randint``/``np.random.choice`` drawing a batch (``size``) of
        indices below the length of a numpy array in the calling frame, called by the
        script's own code: a plain-array buffer's sample. It lasts from the draw to the
        next hooked call (the gathers and tensor conversions between); the arrays'
        length is the capacity."""
        hooks = self
        for name in ("randint", "choice"):
            original = getattr(np.random, name)

            def draw(*args, _original=original, _name=name, **kwargs):
                if hooks.depth:
                    return _original(*args, **kwargs)
                if _name == "randint":
                    size = kwargs.get("size", args[2] if len(args) > 2 else None)
                    high = kwargs.get("high", args[1] if len(args) > 1 else None)
                    high = args[0] if high is None and args else high
                else:
                    size = kwargs.get("size", args[1] if len(args) > 1 else None)
                    high = args[0] if args and isinstance(args[0], (int, np.integer)) \
                        else None
                frame = sys._getframe(1)
                lengths = [v.shape[0] for v in (*frame.f_globals.values(),
                                               *frame.f_locals.values())
                           if isinstance(v, np.ndarray) and v.ndim >= 1] \
                    if isinstance(size, (int, np.integer)) and size > 0 \
                    and isinstance(high, (int, np.integer)) \
                    and hooks.beside(frame.f_code.co_filename) else []
                lengths = [n for n in lengths if n >= high]
                if not lengths:
                    return _original(*args, **kwargs)
                t0 = perf_counter_ns()
                out = _original(*args, **kwargs)
                hooks.array_replay = True
                hooks.replay_capacity = int(max(lengths))
                hooks.events.append(_Event("replay_sample", t0, perf_counter_ns() - t0,
                                           int(size), reaches_next=True))
                return out

            self.swap(np.random, name, draw)

    def _watch_param_writes(self) -> None:
        """In-place writes to a network's parameters outside an optimizer step and outside
        any other hooked call (CleanRL's ``target.data.copy_(...)``, Polyak updates by
        ``lerp_``, ``mul_`` and ``add_``, and their ``torch._foreach_`` forms): a target
        copy, one ``sync`` row per run of such writes with no other hooked call between."""
        import torch

        hooks = self

        def watch(owner: Any, name: str, first) -> None:
            fn = getattr(owner, name)

            def write(*args, **kwargs):
                dst = first(args)
                if hooks.depth or not isinstance(dst, torch.Tensor) \
                        or dst.layout != torch.strided or dst.data_ptr() not in hooks.param_ptrs:
                    return fn(*args, **kwargs)
                t0 = perf_counter_ns()
                hooks.depth += 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    hooks.depth -= 1
                    t1 = perf_counter_ns()
                    last = hooks.last_write
                    if last is not None and hooks.events and hooks.events[-1] is last:
                        last.dur = t1 - last.t0
                    else:
                        hooks.last_write = _Event("sync", t0, t1 - t0)
                        hooks.events.append(hooks.last_write)

            self.swap(owner, name, write)

        for name in PARAM_WRITES:
            watch(torch.Tensor, name, lambda args: args[0] if args else None)
        for name in PARAM_WRITES:
            if hasattr(torch, f"_foreach_{name}"):
                watch(torch, f"_foreach_{name}",
                      lambda args: args[0][0] if args and isinstance(args[0], (list, tuple))
                      and args[0] else None)

    def remove(self) -> None:
        for undo in reversed(self.undo):
            undo()
        self.undo.clear()

    # ---- torch's global hooks -----------------------------------------------------
    def _pre(self, module, args) -> None:
        if self.depth == 0:
            self.fwd.append((perf_counter_ns(), module))
        self.depth += 1

    def _post(self, module, args, out) -> None:
        self.depth -= 1
        if self.depth or not self.fwd or self.fwd[-1][1] is not module:
            return
        t0, _ = self.fwd.pop()
        import torch

        if id(module) not in self.described:  # its parameters: where a target copy writes
            self.described.add(id(module))
            self.param_ptrs.update(p.data_ptr() for p in module.parameters())

        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        shape = tuple(tensors[0].shape) if tensors else ()
        if len(tensors) > 1 and id(module) not in self.extra_inputs:
            self.extra_inputs[id(module)] = tuple(tuple(t.shape[1:]) for t in tensors[1:])
        self.events.append(_Event("forward", t0, perf_counter_ns() - t0,
                                  shape[0] if shape else 1, module,
                                  torch.is_grad_enabled(), shape))

    def _opt_pre(self, opt, args, kwargs) -> None:
        self.depth += 1
        self._opt_t0 = perf_counter_ns()

    def _opt_post(self, opt, args, kwargs) -> None:
        self.depth -= 1
        self.events.append(_Event("opt", self._opt_t0, perf_counter_ns() - self._opt_t0))


def _calibrate(hooks: _Hooks) -> float:
    """Median duration a timed wrapper records around a no-op, in ns: its bias."""
    noop = hooks.timed("calibration", lambda: None)
    for _ in range(_CALIBRATION_CALLS):
        noop()
    bias = statistics.median(e.dur for e in hooks.events)
    hooks.events.clear()
    return float(bias)


def check_script(script: str | Path, replay: tuple[str, ...] = (),
                 torch_threads: int | None = CAPTURE_TORCH_THREADS) -> Path:
    """Everything cheap, before the script trains: the file, torch, the thread count, and
    that every --replay class the script should define is defined in it."""
    path = Path(script)
    if not path.is_file() or path.suffix != ".py":
        raise RldseError(f"{script}: expected an existing single-file Python script (.py)")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise RldseError("capture script records PyTorch scripts: pip install "
                         "'rldse[torch]'") from None
    TorchThreads(torch_threads, where="--torch-threads")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
        raise RldseError(f"{script}: not a Python script ({type(exc).__name__}: "
                         f"{getattr(exc, 'msg', exc)}, line {getattr(exc, 'lineno', '?')})"
                         ) from None
    defined = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    for name, spec in parse_replay(replay).items():
        if "." in name:
            continue
        if name not in defined:
            raise RldseError(f"--replay {name}: {path.name} defines no class {name} (name a "
                             "class it defines, or a library one as module.Class)")
        node = defined[name]
        methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        adds, sample = spec or ([m for m in ADD_METHODS if m in methods], "sample")
        if not node.bases and not (adds and {*adds, sample} <= methods):
            raise RldseError(f"--replay {name}: the class has no {'/'.join(adds) or 'add'} "
                             f"or {sample} method (name them: --replay CLASS:ADD,SAMPLE)")
    return path


def run_script(script: str | Path, args: list[str], replay: tuple[str, ...] = (),
               torch_threads: int | None = CAPTURE_TORCH_THREADS,
               on_env_steps: Callable[[int], None] | None = None
               ) -> tuple[list[_Event], _Hooks, float, float]:
    """Run ``script`` hooked: (events, hooks, bias ns, wall s). ``replay``: the classes
    the user named as replay storage; ``torch_threads``: torch's intra-op threads (None:
    the script's own); ``on_env_steps``: called with each env step's env count."""
    path = check_script(script, replay, torch_threads)
    hooks = _Hooks(folder=path.resolve().parent, named=parse_replay(replay), args=list(args),
                   on_env_steps=on_env_steps)
    bias = _calibrate(hooks)
    threads = TorchThreads(torch_threads, where="--torch-threads")
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path.resolve().parent))
    try:
        try:
            hooks.install()
        except (ImportError, AttributeError) as exc:
            raise RldseError(f"--replay: {exc}") from None
        threads.start()
        hooks.load_start = load_sample()
        hooks.cpu.sample()
        t0 = perf_counter()
        failed: Exception | None = None
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise RldseError(f"{script}: exited with status {exc.code}") from None
        except RldseError:
            raise
        except Exception as exc:  # the script's own error: keep what ran (capture_script)
            failed = exc
        finally:
            end_ns = perf_counter_ns()
            hooks.script_wall_s = perf_counter() - t0
            # the loop's wall time: from its first hooked call (the set-up before it,
            # imports, envs, networks, is not the loop) to the script's end
            wall_s = (end_ns - hooks.events[0].t0) / 1e9 if hooks.events else 0.0
            hooks.cpu.sample()
            hooks.torch_threads = threads.stop()
            _reach_next(hooks.events)
    finally:
        hooks.remove()
        sys.argv, sys.path[:] = saved_argv, saved_path
    if failed is not None:
        raise ScriptFailed(_where_failed(failed, path), (hooks.events, hooks, bias, wall_s))
    return hooks.events, hooks, bias, wall_s


def _reach_next(events: list[_Event]) -> None:
    """A plain-array sample lasts until the next hooked call starts (_watch_array_sample)."""
    for e, following in zip(events, events[1:], strict=False):
        if e.reaches_next:
            e.dur = max(e.dur, following.t0 - e.t0)


class ScriptFailed(RldseError):
    """The script raised: the one-line reason, and ``run``, what ran until then (events,
    hooks, bias ns, wall s)."""

    def __init__(self, message: str, run: tuple) -> None:
        super().__init__(message)
        self.run = run


def _where_failed(exc: Exception, path: Path) -> str:
    """``exc`` in one line, at the script's last line in its traceback."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
             if Path(f.filename).resolve() == path.resolve()]
    text = str(exc).splitlines()[0] if str(exc) else ""
    at = f" at line {lines[-1]}" if lines else ""
    return f"{path.name} raised {type(exc).__name__}{at}: {text}"


@dataclass
class _Row:
    worker: str
    phase: str
    iter: int
    t0: int
    dur: int
    items: int
    #: (module, one input's shape) of each distinct module the row's forwards ran
    modules: tuple[tuple[Any, tuple[int, ...]], ...] = ()


def _gaps(events: list[_Event]) -> list[list[_Event]]:
    """Events split at env steps: gap k holds what ran after env step k - 1."""
    gaps: list[list[_Event]] = [[]]
    for e in events:
        if e.kind == "env_step":
            gaps.append([])
        else:
            gaps[-1].append(e)
    return gaps


def infer_loop(events: list[_Event]) -> str:
    """``off_policy`` where replay storage was used; ``on_policy`` where a gap between env
    steps holds several updates (epochs of minibatches), or an update trains on exactly
    the transitions since the last one (A2C's rollout) or on the acts' own forwards
    (REINFORCE); else the script updates on data of its own choosing from storage rldse
    did not recognise: refused, saying how to name it."""
    if not any(e.kind == "opt" for e in events):
        raise RldseError("capture script: the script made no optimizer step (no learning "
                         "seen): is it a PyTorch training script? (--loop cannot help)")
    if any(e.kind in ("replay_add", "replay_sample") for e in events):
        return "off_policy"
    since = updates = 0  # transitions since the last update; updates in this gap
    batch: int | None = None  # the first grad-enabled forward's batch in this gap
    for e in events:
        if e.kind == "env_step":
            since, updates, batch = since + e.items, 0, None
        elif e.kind == "forward" and e.grad and batch is None:
            batch = e.items
        elif e.kind == "opt":
            updates += 1
            if updates > 1 or batch is None or batch == since:
                return "on_policy"
            since, batch = 0, None
    raise RldseError("capture script: the script updates on batches it samples itself, "
                     "like an off-policy loop, but rldse recognised no replay storage: name "
                     "its class with --replay CLASS (CLASS:ADD,SAMPLE where its methods have "
                     "other names), or pass --loop on_policy")


def _modules(forwards: list[_Event]) -> tuple[tuple[Any, tuple[int, ...]], ...]:
    """Each distinct module of ``forwards`` with one input's shape, in first-call order."""
    seen: dict[int, tuple[Any, tuple[int, ...]]] = {}
    for f in forwards:
        if f.module is not None and id(f.module) not in seen:
            seen[id(f.module)] = (f.module, f.shape[1:])
    return tuple(seen.values())


def _learn_row(group: list[_Event], pending: list[_Event], opt: _Event, worker: str,
               n: int) -> _Row:
    """The learn row an optimizer step closes (docs/architecture.md, "Phases"): its batch
    and modules are its own grad-enabled forwards', or, with none, those the acts made
    since the last step (``pending``)."""
    grad = [e for e in group if e.kind == "forward" and e.grad]
    items = grad[0].items if grad else sum(e.items for e in pending) if pending else 1
    first = group[0] if group else opt
    return _Row(worker, "learn", n, first.t0, opt.t0 + opt.dur - first.t0, items,
                _modules(grad or pending))


def _phases(events: list[_Event], loop: str) -> list[_Row]:
    """Rows from the events (docs/architecture.md, "Phases"): env steps and resets, learn
    groups, acts."""
    actor, learner = ("actor/0", "learner") if loop == "on_policy" else ("host", "host")
    rows: list[_Row] = []
    learns = 0
    pending: list[_Event] = []  # grad-enabled act forwards since the last optimizer step
    for k, gap in enumerate(_gaps(events)):
        step = max(0, k - 1)
        group: list[_Event] = []  # forwards and backwards since the gap's last step
        gap_learn: int | None = None  # this gap's learn row (off-policy: all its steps)
        for e in gap:
            if e.kind in ("env_reset", "replay_add"):
                rows.append(_Row(actor, e.kind, step, e.t0, e.dur, e.items))
            elif e.kind in ("replay_sample", "sync"):
                rows.append(_Row(learner, e.kind, learns, e.t0, e.dur, e.items))
            elif e.kind in ("forward", "backward"):
                group.append(e)
            elif e.kind == "opt":
                row = _learn_row(group, pending, e, learner, learns)
                if loop == "off_policy" and gap_learn is not None:
                    # one update of every network the step trains (SAC's critics, actor
                    # and temperature): from its first forward to its last optimizer step
                    first = rows[gap_learn]
                    rows[gap_learn] = replace(
                        first, dur=row.t0 + row.dur - first.t0,
                        modules=tuple({id(m): (m, sh) for m, sh in
                                       (*first.modules, *row.modules)}.values()))
                else:
                    gap_learn = len(rows)
                    rows.append(row)
                    learns += 1
                group, pending = [], []
        acts = [e for e in group if e.kind == "forward"]
        if acts:  # the forwards after the gap's last optimizer step: the next act
            end = max(a.t0 + a.dur for a in acts)
            rows.append(_Row(actor, "act", k, acts[0].t0, end - acts[0].t0, acts[0].items,
                             _modules(acts)))
            pending.extend(a for a in acts if a.grad)
    steps = [e for e in events if e.kind == "env_step"]
    rows.extend(_Row(actor, "env_step", i, e.t0, e.dur, e.items) for i, e in enumerate(steps))
    if loop == "off_policy":  # a step with no forward before it explored: no network ran
        acted = {r.iter for r in rows if r.phase == "act"}
        rows.extend(_Row(actor, "act", i, e.t0, 0, e.items)
                    for i, e in enumerate(steps) if i not in acted)
    return sorted(rows, key=lambda r: (r.t0, r.phase))


def capture_script(script: str | Path, args: list[str], *, loop: str | None = None,
                   env_id: str | None = None, seed: int | None = None,
                   replay: tuple[str, ...] = (),
                   torch_threads: int | None = CAPTURE_TORCH_THREADS,
                   out: Path | None = None,
                   on_env_steps: Callable[[int], None] | None = None) -> Trace:
    """Run ``script`` with ``args``, hooked, and return its Trace (module docstring),
    written to ``out`` where given; a run whose trace cannot be made or written leaves
    its raw record beside ``out`` (RAW_SUFFIX) and fails naming it. ``seed``: the seed
    to record (None: the script's, its first env reset's); ``on_env_steps``: called with
    each env step's env count (a progress bar)."""
    if loop is not None and loop not in LOOPS:
        raise RldseError(f"--loop {loop}: capture script records {' or '.join(LOOPS)} "
                         "PyTorch loops (a tabular loop has no network to hook)")
    if seed is not None and seed < 0:
        raise RldseError(f"--seed {seed}: expected 0 or more")
    name = Path(script).name
    try:
        events, hooks, bias, wall_s = run_script(script, args, tuple(replay), torch_threads,
                                                 on_env_steps)
    except ScriptFailed as failed:
        events, hooks, bias, wall_s = failed.run
        if out is None or not events:
            raise RldseError(failed.message) from None
        raw = _save_raw(out, events, hooks, bias, wall_s, name, list(args), loop, env_id)
        raise RldseError(f"{failed.message}; the raw record of what ran is in {raw}"
                         ) from None
    try:
        trace = _script_trace(events, hooks, loop, env_id, seed, bias, wall_s, name)
        if out is not None:
            trace.save(out)
        return trace
    except Exception as exc:  # the run is over: keep what it measured, whatever failed
        if out is None:
            raise
        reason = exc.message if isinstance(exc, RldseError) else \
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raw = _save_raw(out, events, hooks, bias, wall_s, name, list(args), loop, env_id)
        raise RldseError(f"{name}: the run finished but its trace was not written "
                         f"({reason}); its raw record is in {raw}") from None


def _script_trace(events: list[_Event], hooks: _Hooks, loop: str | None,
                  env_id: str | None, seed: int | None, bias: float, wall_s: float,
                  name: str) -> Trace:
    if not any(e.kind == "env_step" for e in events):
        raise RldseError(f"{name}: no environment step seen (rldse hooks gymnasium's "
                         "vector envs and gymnasium.make)")
    loop = loop or infer_loop(events)
    rows = _phases(events, loop)
    env = env_id or (hooks.env_ids[0] if hooks.env_ids else None)
    if env is None:
        raise RldseError(f"{name}: the env id is unknown (made without gymnasium.make): "
                         "pass --env")
    if seed is not None:
        seed_from = "--seed"
    elif hooks.seed is not None:
        seed, seed_from = hooks.seed, "the script's first env reset"
    else:
        seed, seed_from = 0, "none seen (the script seeds no env reset)"
    return _trace(rows, events, hooks, loop, env, (seed, seed_from), bias, wall_s, name)


def _save_raw(out: Path, events: list[_Event], hooks: _Hooks, bias: float, wall_s: float,
              name: str, args: list[str], loop: str | None, env_id: str | None) -> Path:
    """The raw record beside ``out``: one row per hooked call (kind, start and duration in
    ns, items, whether grad was on, the module's index and input shape) and, in the
    Parquet metadata under ``rldse.raw``, the run's context (its episode returns, seed
    and arguments too) and each module's description."""
    import pandas as pd

    from rldse.files import atomic_write

    modules: dict[int, int] = {}
    described = []
    for e in events:
        if e.module is not None and id(e.module) not in modules:
            modules[id(e.module)] = len(described)
            described.append({"class": type(e.module).__name__, "repr": repr(e.module)})
    table = pd.DataFrame({
        "kind": [e.kind for e in events], "t0_ns": [e.t0 for e in events],
        "dur_ns": [e.dur for e in events], "items": [e.items for e in events],
        "grad": [e.grad for e in events],
        "module": [modules.get(id(e.module), -1) for e in events],
        "shape": [json.dumps(list(e.shape)) for e in events]})
    context = {"script": name, "args": args, "loop": loop, "env_id": env_id,
               "env_ids": hooks.env_ids, "replay_classes": hooks.replay_classes,
               "replay_capacity": hooks.replay_capacity, "bias_ns": bias, "wall_s": wall_s,
               "script_wall_s": hooks.script_wall_s,
               "load_start": hooks.load_start, "torch_threads": hooks.torch_threads,
               "episode_returns": hooks.episodes.returns, "seed": hooks.seed,
               "options": hooks.options, "modules": described}
    raw = out.with_name(out.name.removesuffix(".parquet") + RAW_SUFFIX)

    def write(tmp: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        t = pa.Table.from_pandas(table, preserve_index=False)
        t = t.replace_schema_metadata({b"rldse.raw": json.dumps(context, default=repr)})
        pq.write_table(t, tmp)

    return atomic_write(raw, write)


def _trace(rows: list[_Row], events: list[_Event], hooks: _Hooks, loop: str, env_id: str,
           seeded: tuple[int, str], bias: float, wall_s: float, name: str) -> Trace:
    from rldse.recording.info import workload_info
    from rldse.recording.loops import loop_kind
    from rldse.workloads.common.base import build_trace
    from rldse.workloads.common.recorder import rows_to_frame

    seed, seed_from = seeded
    kind = loop_kind(loop)
    n_envs = next(e.items for e in events if e.kind == "env_step")
    inferred: list[str] = []
    if loop == "off_policy" and (hooks.list_replay or hooks.array_replay) and not any(
            r.phase == "replay_add" for r in rows):  # a list's appends, array writes: untimed
        rows = sorted(rows + [_Row(r.worker, "replay_add", r.iter, r.t0 + r.dur, 0, r.items)
                              for r in rows if r.phase == "env_step"],
                      key=lambda r: (r.t0, r.phase))
        inferred.append("replay_add")
    missing = [p for p in kind.required if p not in {r.phase for r in rows}
               and p not in ("rollout_add", "sync")]
    if missing:
        hint = (" (name the script's replay buffer class with --replay CLASS)"
                if missing[0].startswith("replay") else "")
        raise RldseError(f"{name}: the {loop} loop recorded no '{missing[0]}' phase{hint}; "
                         f"rldse hooks {_HOOKED}")
    learn = [r for r in rows if r.phase == "learn"]
    act = next(r for r in rows if r.phase == "act")
    obs_shape = act.modules[0][1] if act.modules else ()
    if loop == "off_policy":
        nets = _off_policy_nets(learn, hooks, name)
        hp = _offpolicy_schedule(rows, hooks, n_envs, inferred)
    else:
        nets = _on_policy_nets(learn, obs_shape, name, hooks.extra_inputs)
        hp, rows = _onpolicy_schedule(rows, n_envs)
    by_module = {id(n.module): n for n in nets.values()}
    workload = kind.workload(nets)
    info = workload_info(workload, nets, hp)
    works: dict[tuple, tuple[int, int]] = {}
    operators: list = []

    def work(r: _Row) -> tuple[int, int]:
        """An act's work: its modules' forwards (all networks' if none is known; none
        for an exploring act, which ran no module); a learn's: every network's forward,
        backward and Adam step (and their operators, once per kind, for the trace)."""
        if r.phase == "act" and not r.modules:
            return 0, 0
        ran = [by_module[id(m)] for m, _ in r.modules if id(m) in by_module]
        key = (r.phase, r.items, tuple(id(n) for n in ran))
        if key not in works:
            learning = r.phase == "learn"
            used = list(nets.values() if learning or not ran else ran)
            totals = [n.work(r.items, learning) for n in used]
            works[key] = (sum(f for f, _ in totals), sum(b for _, b in totals))
            counted = used[0].operator_work(r.items, learning)
            for n in used[1:]:
                counted += n.operator_work(r.items, learning)
            operators.extend(operator_records(r.phase, r.items, counted, flops=works[key][0],
                                              source="modules"))
        return works[key]

    out = []
    for r in rows:
        flops, nbytes = work(r) if r.phase in ("act", "learn") else (0, 0)
        dtype = "fp32" if flops or nbytes else "fp64" if r.phase.startswith("env") else "none"
        out.append((r.worker, r.phase, r.iter, r.t0, r.dur, r.items, flops, nbytes, 0, dtype))
    origin = min(r.t0 for r in rows)
    start = np.array([r.t0 for r in rows], np.int64)
    frac = hooks.cpu.fraction(start, start + np.array([r.dur for r in rows], np.int64))
    frame = rows_to_frame(out, origin, bias, frac)
    hp = {**hp, "script": name, "loop": loop, "inferred": inferred,
          "replay_classes": hooks.replay_classes, "script_wall_s": hooks.script_wall_s,
          "script_args": hooks.args, "script_options": hooks.options,
          "seed_from": seed_from}
    return build_trace(workload=workload, algorithm=f"script:{Path(name).stem}", env_id=env_id,
                       seed=seed, hyperparameters=hp, workload_info=info,
                       episode_returns=hooks.episodes.returns, wall_time_s=wall_s,
                       frames=[frame],
                       overhead_ns=bias, load_start=hooks.load_start,
                       torch_threads=hooks.torch_threads, operators=operators)


_HOOKED = ("gymnasium vector envs and gymnasium.make, module forwards, backward, optimizer "
           "steps, load_state_dict and parameter copies, replay buffers (SB3's, TorchRL's, "
           "a class beside the script with sample and add, --replay CLASS, random.sample "
           "from a list, np.random.randint into the script's arrays)")


def _off_policy_nets(learn: list[_Row], hooks: _Hooks, name: str) -> dict:
    """An off-policy script's networks, the modules its learn steps trained: the first as
    ``q``, the others (SAC's second critic and actor) as ``part1``, ...; each with the
    further inputs its forward took (a critic's action)."""
    from rldse.recording.network import Network

    trained = list({id(m): (m, shape) for r in learn for m, shape in r.modules}.values())
    if not trained:
        raise RldseError(f"{name}: no learn step ran a module forward with gradients, so "
                         "the Q network is unknown")
    nets = [Network(m, shape, where=f"{name}: network",
                    extra_inputs=hooks.extra_inputs.get(id(m), ())) for m, shape in trained]
    return {"q": nets[0], **{f"part{i}": n for i, n in enumerate(nets[1:], 1)}}


def _offpolicy_schedule(rows: list[_Row], hooks: _Hooks, n_envs: int,
                        inferred: list[str]) -> dict[str, Any]:
    """DQN's schedule as the script ran it, in env steps (vector steps × envs)."""
    env_rows = [r for r in rows if r.phase == "env_step"]
    learn_at = _env_step_at(env_rows, [r.t0 for r in rows if r.phase == "learn"])
    sync_at = _env_step_at(env_rows, [r.t0 for r in rows if r.phase == "sync"])
    batch = next(r.items for r in rows if r.phase == "learn")
    total = n_envs * len(env_rows)
    if len(sync_at) < 2:  # one copy (the set-up's) or none: no interval seen
        inferred.append("target_sync")
    capacity = hooks.replay_capacity
    if capacity is None:
        capacity = total
        inferred.append("replay_capacity")
    return {"batch_size": batch, "replay_capacity": capacity,
            "learning_starts": n_envs * max(0, learn_at[0] - 1),  # after that step's env step
            "learn_every": max(1, n_envs * _median_gap(learn_at, len(env_rows))),
            "target_sync": max(1, n_envs * _median_gap(sync_at, len(env_rows))),
            "updates": len(learn_at)}


def _env_step_at(env_rows: list[_Row], times: list[int]) -> list[int]:
    """For each time, the vector env steps done before it."""
    import bisect

    starts = [r.t0 for r in env_rows]
    return [bisect.bisect_left(starts, t) for t in times]


def _median_gap(at: list[int], default: int) -> int:
    gaps = [b - a for a, b in zip(at, at[1:], strict=False) if b > a]
    return int(statistics.median(gaps)) if gaps else default


def _on_policy_nets(learn: list[_Row], obs_shape: tuple[int, ...], name: str,
                    extra: dict[int, tuple[tuple[int, ...], ...]]) -> dict:
    """An on-policy script's networks, the modules its learn steps trained (module
    docstring): ``policy`` and ``value`` where they are two modules on the observations,
    the value one with one output; else every module, the first as ``policy`` (one
    network: REINFORCE's policy, a shared actor-critic body; parts: ``part1``, ...)."""
    from rldse.recording.network import Network

    modules = list({id(m): (m, shape) for r in learn for m, shape in r.modules}.values())
    if not modules:
        raise RldseError(f"{name}: no learn step trained a module (no forward with "
                         "gradients before an optimizer step)")
    nets = [Network(m, shape, where=f"{name}: network", extra_inputs=extra.get(id(m), ()))
            for m, shape in modules]
    if len(nets) == 2 and all(n.obs_shape == tuple(obs_shape) and n.sizes for n in nets):
        value = [n for n in nets if n.sizes[-1] == 1]
        policy = [n for n in nets if n.sizes[-1] != 1]
        if len(value) == 1 and len(policy) == 1:
            return {"policy": policy[0], "value": value[0]}
    return {"policy": nets[0], **{f"part{i}": n for i, n in enumerate(nets[1:], 1)}}


def _onpolicy_schedule(rows: list[_Row], n_envs: int) -> tuple[dict[str, Any], list[_Row]]:
    """Rollout length and epochs as the script ran them; the zero-duration rollout_add and
    sync rows of a one-process loop (docs/architecture.md, "Phases"). An iteration's sync
    opens it, at its first actor-side row; its acts are numbered from iteration × rollout
    length (the program finds an iteration's first act so), the length being the median,
    as episodes (REINFORCE's rollouts) vary."""
    out, iteration, in_rollout, learns = [], 0, 0, 0
    steps_per_iter: list[int] = []
    acts: list[tuple[int, int, int]] = []  # (index in out, iteration, step in it)
    last_learn = False
    for r in rows:
        if r.worker != "learner" and last_learn:
            iteration += 1
            steps_per_iter.append(in_rollout)
            out.append(_Row("learner", "sync", iteration, r.t0, 0, 1))
            in_rollout, last_learn = 0, False
        if r.phase == "learn" and not last_learn:
            out.append(_Row("actor/0", "rollout_add", iteration, r.t0, 0, in_rollout * n_envs))
            last_learn = True
        if r.phase == "act":
            acts.append((len(out), iteration, in_rollout))
        if r.phase == "env_step":
            in_rollout += 1
        if r.phase == "learn":
            learns += 1
        out.append(r)
    if last_learn or not steps_per_iter:
        steps_per_iter.append(in_rollout)
    T = max(1, int(statistics.median(steps_per_iter)))
    for i, k, j in acts:
        out[i] = replace(out[i], iter=k * T + min(j, T - 1))
    batch = int(statistics.median(r.items for r in rows if r.phase == "learn"))
    iterations = max(1, iteration + (1 if last_learn else 0))
    epochs = max(1, round(learns / iterations * batch / max(1, T * n_envs)))
    at = next(i for i, r in enumerate(out) if r.phase == "act")  # after the set-up's time
    out.insert(at, _Row("learner", "sync", 0, out[at].t0, 0, 1))
    return ({"envs_per_actor": n_envs, "rollout_len": T, "batch_size": batch,
             "epochs": epochs}, out)
