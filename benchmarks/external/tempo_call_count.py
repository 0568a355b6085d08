"""Count the host-side operations Tempo-JAX's executor makes per time step of REINFORCE.

Runs Tempo's own REINFORCE (github.com/lsds/Tempo, repro/sec7_4_algo_specific_sched:
tempo-jax, enable_swap, 2 × 64 hidden, the trivial env) at tiny shapes on the CPU, wraps
every schedule instruction's thunk, every ``jax.jit`` callable (calls with traced arguments,
i.e. inlined into another jit, are not counted) and every runtime tensor's reads and writes,
and prints, for each time loop of the schedule, the operations per trip by kind. The counts
feed ``rldse.workloads.timerl.program.TEMPO_STEP_CALLS``.

swap_bytes_min and min_block_store_tensor_point_size are scaled by (this run's / the full
run's) per-step bytes, so that Tempo's size-dependent storage decisions are those of the
full 256 × 3×256×256 run; with ``--scale-inc`` incrementalize_mem_threshold is scaled by
the rollout's (steps × step bytes) ratio too, so that Tempo incrementalizes the backward
as the full run does (one-step blocks inside the acting loop; without it, small runs keep
the rollout and run one batched backward after the loop). TEMPO_STEP_CALLS is counted
with ``--scale-inc``. Two shims stand in for bugs of Tempo's lazy-slice path at commit
a16e081f under jax 0.6.2 (``lax.squeeze(axis=)``, a 1-tuple start index); they change no count.

Needs: a Python with jax==0.6.2 (Tempo's docker pin), islpy==2025.2.5, gymnasium==0.26.3,
torch, optree, networkx, sympy, pulp, graphviz, psutil, and a Tempo checkout. Not run by the
tests (gym==0.26.2 too: tempo/api/rl/env/space_utils.py imports it). Example (TD 1-step,
256 envs, 100 steps, 3×16×16 observations, 3 iterations, as TEMPO_STEP_CALLS was counted):

    python benchmarks/external/tempo_call_count.py --tempo /tmp/tempo --objective 1 \\
        --envs 256 --steps 100 --side 16 --iterations 3 --scale-inc
"""

from __future__ import annotations

import argparse
import collections
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

FULL_STEP_ELEMENTS = 256 * 3 * 256 * 256  # repro: 256 envs × 3×256×256 fp32
FULL_STEPS = 1000  # repro: ep_len


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tempo", required=True, type=Path, help="a Tempo source checkout")
    ap.add_argument("--objective", default="1", help="'mc' or the TD n")
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--side", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/tempo_call_count"))
    ap.add_argument("--scale-inc", action="store_true",
                    help="also scale incrementalize_mem_threshold by the rollout's size ratio")
    a = ap.parse_args()
    check_setup("tempo_call_count", a.tempo)
    counts = run(a)
    for loop, (trips, c) in counts.items():
        print(f"{loop}: {trips} trips; per trip " + ", ".join(
            f"{k} {v / trips:.2f}" for k, v in sorted(c.items())))


def check_setup(tool: str, tempo: Path) -> None:
    """Exit with one line unless this Python has Tempo's dependencies and ``tempo`` is a
    Tempo checkout."""
    missing = [m for m in ("jax", "islpy", "torch", "gymnasium")
               if importlib.util.find_spec(m) is None]
    if missing or not (tempo / "tempo" / "runtime" / "executor").is_dir():
        sys.exit(f"{tool}: needs " + (", ".join(missing) + " installed" if missing
                 else f"a Tempo checkout at --tempo (got {tempo})"))


def run(a: argparse.Namespace, on_jit=None, on_log=None
        ) -> dict[str, tuple[int, collections.Counter]]:
    """Run Tempo's REINFORCE and count per loop trip. ``on_jit(jitted, args, kw, counter)``,
    if given, is called before every counted (untraced) jitted call, with the Counter the
    call is counted in (benchmarks/external/tempo_xla_cost.py adds XLA's cost analysis there);
    ``on_log(record)`` at each of Tempo's per-iteration stats records."""
    sys.path.insert(0, str(a.tempo))
    import jax
    from jax._src import core as jcore

    cur: list[collections.Counter | None] = [None]
    real_jit = jax.jit

    class CountingJit:
        def __init__(self, f):
            self._f = f

        def __call__(self, *args, **kw):
            if cur[0] is not None and not any(isinstance(x, jcore.Tracer)
                                              for x in jax.tree_util.tree_leaves((args, kw))):
                cur[0]["jit"] += 1
                if on_jit is not None:
                    on_jit(self._f, args, kw, cur[0])
            return self._f(*args, **kw)

        def __getattr__(self, name):
            return getattr(self._f, name)

    def counting_jit(fun=None, *args, **kw):
        if fun is None:
            return lambda f: counting_jit(f, *args, **kw)
        return CountingJit(real_jit(fun, *args, **kw))

    jax.jit = counting_jit
    from jax._src import dispatch
    real_apply = dispatch.apply_primitive

    def counting_apply(prim, *args, **params):
        if cur[0] is not None:
            cur[0]["eager"] += 1
        return real_apply(prim, *args, **params)

    dispatch.apply_primitive = counting_apply
    real_squeeze, real_dslice = jax.lax.squeeze, jax.lax.dynamic_slice_in_dim
    jax.lax.squeeze = lambda x, dimensions=None, axis=None: real_squeeze(
        x, dimensions if axis is None else (axis,))
    jax.lax.dynamic_slice_in_dim = lambda x, start, *r, **k: real_dslice(
        x, start[0] if isinstance(start, tuple) else start, *r, **k)

    from repro.sec7_4_algo_specific_sched.impls import tempo_reinforce as tr
    from tempo.core.schedule import execution_schedule as es

    step_ratio = a.envs * 3 * a.side * a.side / FULL_STEP_ELEMENTS
    real_cfg = tr.get_tempo_rl_train_config

    def cfg(**kw):
        c = real_cfg(**kw)
        c.render_schedule = c.visualize_debug_stages = False
        c.swap_bytes_min = int(c.swap_bytes_min * step_ratio)
        c.min_block_store_tensor_point_size = int(c.min_block_store_tensor_point_size
                                                  * step_ratio)
        if getattr(a, "scale_inc", False):
            # incrementalization is decided on whole-op sizes (the rollout: steps x step)
            c.incrementalize_mem_threshold = int(c.incrementalize_mem_threshold * step_ratio
                                                 * a.steps / FULL_STEPS)
        return c

    tr.get_tempo_rl_train_config = cfg
    _count_store(cur)

    class Log:
        def log(self, d):
            if on_log is not None:
                on_log(d)

    a.out.mkdir(parents=True, exist_ok=True)
    exe = tr.get_tempo_reinforce_executor(
        stats_logger=Log(), env_name="trivial.trivial", obs_shape=(3, a.side, a.side), seed=0,
        dev="cpu", iterations=a.iterations, gamma=0.99, start_lr=1e-4, num_envs=a.envs,
        ep_len=a.steps, params_per_layer=64, num_layers=2, sys_cfg="tempo-jax",
        results_path=str(a.out), objective=None if a.objective == "mc" else int(a.objective))
    sched = exe.executor_ctx.analysis_ctx.execution_schedule.schedule
    loops: dict[str, tuple[int, collections.Counter]] = {}
    stack: list[tuple[str, collections.Counter]] = []

    def record(kind: str, body) -> None:
        outer = cur[0]
        cur[0] = collections.Counter({kind: 1})
        try:
            body()
        finally:
            c, cur[0] = cur[0], outer
            outside = loops.setdefault("outside loops, all iterations", (1, collections.Counter()))
            (stack[-1][1] if stack else outside[1]).update(c)

    for item in sched.flat_recursive_tree:
        if isinstance(item, es.ExecInstruction):
            op = type(exe.dg.get_op_by_id(item.op_id)).__name__
            launcher = item.thunk

            class Launch:
                def launch(self, launcher=launcher, op=op):
                    record(f"exec {op}", launcher.launch)

            object.__setattr__(item, "thunk", Launch())
        elif isinstance(item, es.MemManInstr):
            f, kind = item.thunk, type(item).__name__
            object.__setattr__(item, "thunk",
                               lambda idx, f=f, kind=kind: record(kind, lambda: f(idx)))

    import tempo.runtime.executor.nongen_executor as ng
    real_for = ng.dispatch_map[es.InstructionType.FOR_LOOP]

    def counted_for(item, counters, backend):
        seq[0] += 1
        outer = ", ".join(f"{k}={v}" for k, v in counters.items())
        name = f"loop {seq[0]} depth {len(stack)} ({item.cond}) at ({outer})"
        ops, trips = collections.Counter(), [0]
        kind = item.inner.instr_type
        real_inner = ng.dispatch_map[kind]

        def inner(block, *rest):
            trips[0] += block is item.inner
            real_inner(block, *rest)

        ng.dispatch_map[kind] = inner
        stack.append((name, ops))
        try:
            real_for(item, counters, backend)
        finally:
            stack.pop()
            ng.dispatch_map[kind] = real_inner
        loops[name] = (trips[0], ops)

    seq = [0]
    ng.dispatch_map[es.InstructionType.FOR_LOOP] = counted_for
    exe.execute()
    return loops


def _count_store(cur: list) -> None:
    """Count reads and writes of every runtime tensor class (outermost call only)."""
    import tempo.runtime.tensor_store as pkg
    for m in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"tempo.runtime.tensor_store.{m.name}")
    from tempo.runtime.tensor_store.tensor_store import RuntimeTensor
    depth = [0]
    seen, todo = set(), [RuntimeTensor]
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        todo.extend(c.__subclasses__())
        for name, kind in (("__getitem__", "store read"), ("all_int_fast_path", "store read"),
                           ("__setitem__", "store write"),
                           ("all_int_fast_path_set", "store write")):
            f = c.__dict__.get(name)
            if f is None:
                continue

            def wrapped(self, *args, f=f, kind=kind, **kw):
                if cur[0] is not None and depth[0] == 0:
                    cur[0][kind] += 1
                depth[0] += 1
                try:
                    return f(self, *args, **kw)
                finally:
                    depth[0] -= 1

            setattr(c, name, wrapped)


if __name__ == "__main__":
    main()
