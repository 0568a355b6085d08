"""XLA's counted work and Tempo-JAX's counted host calls per time step: the cost law the
program's step costs come from (``costs.step_costs``), neither a measured time."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.workloads.timerl.program.shape import TempoShape


@dataclass(frozen=True)
class Linear:
    """const + per_element × (envs × features of one step's observations)."""

    const: float
    per_element: float

    def at(self, shape: TempoShape) -> float:
        return self.const + self.per_element * shape.envs * shape.features


@dataclass(frozen=True)
class XlaCost:
    """XLA's cost analysis of one time step's jitted calls: ``bytes`` is 'bytes accessed'
    as XLA:CPU compiles them, ``reduction_bytes`` the part that is per-sample products
    written only to be reduced (``benchmarks/external/tempo_xla_cost.py: reduction_bytes``)."""

    flops: Linear
    bytes: Linear
    reduction_bytes: Linear

    def bytes_at(self, shape: TempoShape, fuse_reductions: bool) -> float:
        b = self.bytes.at(shape)
        return b - self.reduction_bytes.at(shape) if fuse_reductions else b


#: Counted, not estimated: XLA's cost analysis (``jitted.lower(*args).compile()
#: .cost_analysis()``, jax/jaxlib 0.6.2, XLA:CPU) of every jitted call Tempo-JAX makes per
#: time step of its REINFORCE, github.com/lsds/Tempo at commit
#: a16e081f4c9da7f14dcdf296590486df337f5643 (tempo-jax, enable_swap, 2 × 64 hidden, trivial
#: env), 256 envs × 100 steps × 3×side×side for side 8, 16, 32, 48, 3 iterations, the
#: storage and incrementalization thresholds scaled by the full run's sizes (so the
#: backward is incrementalized per step, as at 256 × 1000 × 3×256×256). Per time step of a
#: steady iteration, least-squares fits over the four sides; largest residual relative to
#: the value, bytes as compiled: act 0.5 %, TD step 0.07 %, MC act 3.2 %, MC learn 0.5 %,
#: reduction intermediates 0.12 %; bytes less those intermediates (what the model charges):
#: TD step 2.3 %, MC learn 12 % (both at side 8, where they are a few MB); flops ≤ 0.2 %.
#: Reproduce with
#: ``python benchmarks/external/tempo_xla_cost.py --tempo <Tempo checkout> --sweep --objectives
#: 1,8,mc --points 256x8,256x16,256x32,256x48 --steps 100 --iterations 3`` in a Python
#: with jax==0.6.2 (benchmarks/external/tempo_call_count.py lists the rest).
#: - "act": the env step, the forward and the step's stores (TD 8-step's acting-only loop);
#: - "td": a whole TD time step (env, forward, the backward of the step whose loss is
#:   known, stores), the same for n = 1 and n = 8 to 1e-5 (the iteration's other work,
#:   spread over its 100 steps, included: ≤ 0.1 % of the bytes);
#: - "mc_act": Monte-Carlo's acting step (its forward and store writes take a 2-step
#:   block buffer whole as an operand at 100 steps; 1000 steps use blocks of 5);
#: - "mc_learn": Monte-Carlo's backward, per time step.
TEMPO_STEP_XLA = {
    "act": XlaCost(flops=Linear(4.60591e6, 128.010), bytes=Linear(1.22358e6, 9.03835),
                   reduction_bytes=Linear(0.0, 0.0)),
    "td": XlaCost(flops=Linear(1.37907e7, 256.084), bytes=Linear(2.07010e7, 545.296),
                  reduction_bytes=Linear(1.79115e7, 527.761)),
    "mc_act": XlaCost(flops=Linear(4.74764e6, 128.982), bytes=Linear(1.78829e6, 28.9277),
                      reduction_bytes=Linear(0.0, 0.0)),
    "mc_learn": XlaCost(flops=Linear(9.18988e6, 128.049), bytes=Linear(1.94335e7, 526.525),
                        reduction_bytes=Linear(1.75824e7, 519.995)),
}
#: XLA:GPU fuses an elementwise producer (the per-sample gradient products) into the
#: reduction that consumes it, so on the A6000 those products are not written to memory;
#: False charges the step as XLA:CPU compiled it.
FUSE_REDUCTIONS = True

#: Host seconds per call of a jitted JAX function: jax-ml/jax PR #4128's dispatch
#: benchmarks, jit_simple_dispatch 60.7 µs (nominal: Tempo's calls pass several arrays) and
#: jit_trivial_dispatch 28.9 µs (the low end of the range).
JAX_JIT_DISPATCH_S = 60.7e-6
JAX_JIT_DISPATCH_RANGE_S = (28.9e-6, 60.7e-6)


@dataclass(frozen=True)
class StepCalls:
    """Host-side operations Tempo-JAX's executor makes per time step, by kind."""

    jit: int  # jitted-function calls: dataflow groups, and the env step's jit in its UDF
    store_reads: int  # tensor-store reads (inputs fetched by the launchers)
    store_writes: int  # tensor-store writes (outputs stored)
    deallocs: int  # DeallocInstructions


#: Counted, not estimated: github.com/lsds/Tempo at commit a16e081f4c9da7f14dcdf296590486df337f5643
#: (2025-10-21), its repro/sec7_4_algo_specific_sched REINFORCE (tempo-jax, enable_swap, 2 × 64
#: hidden, trivial env) run on this repository's CPU host with jax 0.6.2 (Tempo's docker pin)
#: by ``benchmarks/external/tempo_call_count.py --scale-inc``, which wraps every schedule
#: instruction's thunk, every ``jax.jit`` callable and every runtime tensor's read/write, and
#: counts inside each time loop's body. 256 envs × 100 steps × 3×16×16, 3 iterations, with
#: swap_bytes_min, min_block_store_tensor_point_size and incrementalize_mem_threshold scaled
#: by the full run's sizes, so the storage and incrementalization decisions are the full
#: run's: the backward is incrementalized to one time step (Tempo's "Inc round 0 ... 1000
#: blocks of size 1" at 1000 steps) and runs inside the acting loop. Per step of a steady
#: iteration: TD 1-step 15 jitted calls, TD 8-step 18; Monte-Carlo's acting loop 6 (its
#: backward runs in loops of its own, about 6 calls per step, under the swap-in). An earlier
#: count without the incrementalization threshold scaled (8 calls per TD step) saw the
#: small run's schedule, a batched backward after the loop, not the full run's. n = 64
#: was not run: it takes n = 8's count. No eager (non-jitted) JAX op runs in a step.
TEMPO_STEP_CALLS = {"td": StepCalls(jit=15, store_reads=51, store_writes=36, deallocs=30),
                    "td_n": StepCalls(jit=18, store_reads=55, store_writes=39, deallocs=33),
                    "mc": StepCalls(jit=6, store_reads=15, store_writes=10, deallocs=1)}
#: Jitted calls per iteration outside the time loops (Adam, returns, the loss), counted by
#: the same runs: 172 (TD 1-step) over 3 iterations, the first iteration's set-up included.
TEMPO_ITERATION_JIT_CALLS = 57


def step_calls(td_steps: int | None) -> StepCalls:
    """Tempo's counted host operations per acting step: Monte-Carlo, TD 1-step, TD n > 1."""
    return TEMPO_STEP_CALLS["mc" if td_steps is None else "td" if td_steps == 1 else "td_n"]
