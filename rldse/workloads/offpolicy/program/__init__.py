"""The simulated twin of the off-policy loop that dqn.py and ddpg.py run for real.

Actors step environments, choose actions and insert transitions; a learner samples a
batch, learns, and updates priorities; parameters go back to the actors. Placement
(SystemSpec.placement) puts `act`, `replay` and `learn` on CPU, GPU or TCAM (replay).

`learner: sync` is the real loop: every actor runs a chunk of steps, then the learner
does, one after another, the updates that keep the trace's update-to-data ratio
(sample, learn, priority update, inserts), while actors wait.

`learner: async` lets actors run freely on `workload.cores` cores, and a replay manager
(RM) and learner (L) follow PEARL's protocol (Meng et al., arXiv 2311.09445): sample on
RM, then the priority update and the inserts gathered since the last update on RM
*overlap* the gradient step on L, so an iteration costs
T_sample + max(T_update + T_insert, T_learn) when nothing else contends. The learner
never gets ahead of the data: it counts only transitions whose steps have finished.

With replay on the CPU the inserts are the actors' own work (on their cores, as in the
real loop); on a GPU or TCAM the RM inserts each batch of new transitions at once.

GPU work has two sides (rldse.models.gpu): the framework's dispatch, booked on the
issuing core (an actor's own core for `act: gpu`; the learner's or the replay manager's
core for `learn`/`replay: gpu`), and the kernels, booked on the GPU; an operation ends
after the later of the two (``Machine.drive``). A launch-bound learner is therefore
paced by its core ("dispatch" in the bottleneck) while the GPU idles between kernels.

Merged events: an actor's chunk of steps is booked as one job per device it uses (its
core for env steps and dispatch, and the GPU for its batch-1 inferences' kernels when
`act: gpu`), so events grow with chunks and updates, not with steps. Per-step GPU/CPU
interleaving inside a chunk is not resolved: a chunk's kernels queue on the GPU as one
block, and the chunk lasts at least its steps' env + insert + act wall time.

Merged rounds (``learner: sync``, merged.py) and merged async (``learner: async``,
maxplus.py) compute runs of rounds or updates as numpy arrays where nothing can delay
the operations they merge; otherwise the SimPy event loop runs (events.py). Costs are in
costs.py, memory checks in memory.py, the merged paths' timeline in timeline.py.
"""

from __future__ import annotations

from rldse.models.kinds import Runs
from rldse.sim.lanes import Lanes
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.common.traced import check_traced_operators
from rldse.workloads.offpolicy.program.context import ActorCosts, Context, State
from rldse.workloads.offpolicy.program.costs import (
    Costs,
    Plus,
    Shape,
    allreduce_seconds,
    learner_costs,
    per_actor,
    replay_job,
    reset_seconds_per_step,
)
from rldse.workloads.offpolicy.program.events import Paths, start_async, sync_loop
from rldse.workloads.offpolicy.program.maxplus import async_merged
from rldse.workloads.offpolicy.program.memory import Memory, gpu_memory, host_memory_bytes
from rldse.workloads.offpolicy.program.timeline import TimelineView
from rldse.workloads.offpolicy.program.updates import UpdateCosts

#: Whether ``learner: async`` takes the merged path where it applies; its test turns it
#: off to prove the merged path against the per-event loop on the same code and models.
MERGE_ASYNC = True


def program(m: Machine, shape: Shape) -> Outcome:
    """Run the off-policy loop on machine `m`; see the module docstring."""
    for phase, work in shape.trace_works.items():  # the twin counts what the loop ran
        check_traced_operators(m.trace, phase, shape.trace_batch if phase == "learn" else 1,
                               work)
    k = m.knobs
    act_r, learn_r, replay_r = m.runner("act"), m.runner("learn"), m.runner("replay")
    # the part issued kernels run on, if any role runs so (its copies, memory and lanes)
    kernels = next((r for r in (learn_r, act_r, replay_r) if r.on_kernel_part), None)
    costs = Costs(m, shape, k.batch_size, kernels)
    cx, job, mem = _context(m, shape, costs, kernels)
    m.clock.instances.update(actor=k.actors, learner=1, replay_manager=1)
    st = State()
    paths = _paths(cx)
    if k.learner == "sync":
        m.env.process(sync_loop(cx, st, paths))
    elif paths.merge_async:
        m.env.process(_async_run(cx, st))
    else:
        start_async(cx, st, paths)
    m.env.run()
    if job is not None:  # per-action energy of the replay part's own model
        rmm = replay_r.model
        inserted = st.steps - st.pending_inserts
        for op, n in (("sample", st.updates),
                      ("update", st.updates if shape.prioritized else 0),
                      ("insert", inserted)):
            for label, joules in rmm.replay_joules(job, op, n).items():
                cx.lc.rm.add_action_energy(label, joules)
    return _outcome(cx, st, mem)


def _context(m: Machine, shape: Shape, costs: Costs, kernels):
    """The run's Context (cost cycles drawn in a fixed order: env step, act, insert, then
    the learner's), the replay part's job (None: replay on the CPU or a measured table)
    and its memory (a swapped replay buffer's copy in before each sample)."""
    k, act_r, replay_r = m.knobs, m.runner("act"), m.runner("replay")
    cpu = m.cpu.device
    gpu = kernels.device if kernels is not None else None
    cores = Lanes(min(k.cores or cpu.lanes, cpu.lanes), clock=m.env)
    learner_core = Lanes(1, clock=m.env)
    rm_core = Lanes(1, clock=m.env) if k.learner == "async" else learner_core
    step_c = per_actor(m, m.cycle("env_step"), k.actors)
    reset_s_per_step = reset_seconds_per_step(m)
    act_c = per_actor(m, costs.cycle("act", act_r), k.actors)
    add_cpu = per_actor(m, m.cycle("replay_add"), k.actors)
    own_model = replay_r.runs is Runs.SERVER  # a kind's own replay model
    job = replay_job(m, shape, k.batch_size, k.replay_capacity) if own_model else None
    lc = learner_costs(m, shape, costs, k.batch_size, job)
    mem = gpu_memory(m, shape, costs, kernels)
    if mem.swapped_bytes:
        lc.sample = Plus(lc.sample, costs.copy(k.batch_size * shape.transition_bytes))
    if job is not None:
        mem.checks.update(replay_r.model.replay_checks(job))
    names = [f"actor {a}" for a in range(k.actors)]
    view = None if m.timeline is None else TimelineView(
        m.timeline, cpu, gpu, act_r.kernels, lc.actors_insert, lc.learner, lc.rm, names)
    actors = ActorCosts(step_c, act_c, add_cpu, reset_s_per_step, act_r.kernels,
                        lc.actors_insert)
    return (Context(m, shape, lc, UpdateCosts(lc), actors, cpu, gpu, cores, learner_core, rm_core,
                    act_r.label, names, view), job, mem)


def _paths(cx: Context) -> Paths:
    """Which paths apply to this run (Paths)."""
    m, k, gpu, lc = cx.m, cx.m.knobs, cx.gpu, cx.lc
    actors, act_kernels = k.actors, cx.actors.kernels
    # merged rounds also need the actors' parameters fresh at every round (no policy lag)
    no_lag = not lc.param_copy.wall_s or k.sync_interval == 1
    merge = (not m.reference and actors <= cx.cores.n and no_lag
             and (not act_kernels or gpu.lanes == 1 or gpu.lanes >= actors))
    # async: merged when no lane is shared (actors on their own cores; each device has a
    # lane for every process that may hold it at once: actors acting on it, RM, learner)
    holders: dict[int, list] = {}
    for dev, n in ((gpu, actors if act_kernels else 0), (lc.rm, 1), (lc.learner, 1)):
        if dev is not None:
            holders.setdefault(id(dev), [dev, 0])[1] += n
    merge_async = (MERGE_ASYNC and not m.reference and actors <= cx.cores.n
                   and all(dev.lanes >= n for dev, n in holders.values()))
    # actors step one operation at a time (actor_steps) in the reference engine, and in
    # the fast one wherever two actors share a lane (more actors than cores, or acting on
    # a GPU with fewer lanes than actors): a chunk booked as one job would hold the lane
    # for all its steps and queue its kernels as one block, 0.8-4.6 % off the per-step
    # schedule (benchmarks/fidelity/reference_agreement.py)
    per_step = m.reference or actors > cx.cores.n or (act_kernels and gpu.lanes < actors)
    # the async learner books an update's drives ahead of the clock (update), unless
    # actors act on a device it uses: then each drive is booked when it starts, so acts
    # that arrive first go first (booked ahead, the learner ran 1.8 % fast)
    at_arrival = m.reference or (act_kernels and (lc.rm is gpu or lc.learner is gpu))
    return Paths(merge, merge_async, per_step, at_arrival)


def _async_run(cx: Context, st: State):
    yield cx.m.env.timeout(async_merged(cx, st))


def _outcome(cx: Context, st: State, mem: Memory) -> Outcome:
    """The run's Outcome: warm-up (until the first update, or the whole run when it never
    came), time per iteration, policy lag, memory and its checks."""
    m, k = cx.m, cx.m.knobs
    breakdown = {"warmup_s": m.env.now if st.first_update_s is None else st.first_update_s}
    if st.updates:
        breakdown["iteration_s"] = (st.last_update_end_s - st.first_update_s) / st.updates
    allreduce_s = allreduce_seconds(m, cx.shape)
    if allreduce_s:  # inside each learn drive (costs._learn_cycle); its total, and the
        # other learners' GPUs, in step with the first, get the first's learn time
        breakdown["allreduce_s"] = st.updates * allreduce_s
        learn = cx.lc.learner.phases.get("learn")
        for dev in m.runner("learn").devices[1:k.learner_gpus]:
            if learn is not None:
                dev.account("learn", learn.busy_s, learn.count)
    staleness = st.staleness
    merged = st.steps - sum(staleness.values())  # merged rounds: no lag by construction
    if merged:
        staleness[0] = staleness.get(0, 0) + merged
    swapped = mem.swapped_bytes
    return Outcome(env_steps=st.steps, updates=st.updates, breakdown_s=breakdown,
                   staleness_updates=staleness,
                   gpu_memory_peak_bytes=int(mem.need_bytes - swapped),
                   swapped_bytes=int(swapped), checks=mem.checks,
                   host_memory_bytes=host_memory_bytes(m, cx.shape, k.replay_capacity,
                                                       k.batch_size, swapped))
