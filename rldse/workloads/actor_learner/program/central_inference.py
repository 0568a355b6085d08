"""Central inference (docs/architecture.md, "Inference"): a long-lived server per inference
device takes every observation waiting (greedy dynamic batching), runs one forward at that
batch, and the served actors step their envs on the cores (FIFO lanes) and submit again.
Actors are entries in a server's heap, not processes: events grow with batches."""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from rldse.sim.timeline import Columns
from rldse.workloads.actor_learner.program.state import Run


@dataclass
class Central:
    """The actors' side of central inference, kept across iterations: each actor's next
    env-step row (``pos``: its env cycle, taken one step at a time as a list, since
    Cycle.take(1) per step would be a third of the run time) and requests left in the
    current rollout (``left``: T + 1, the last one the bootstrap value)."""

    step_s: list[float]  # one vector step of E envs on a core, resets folded in, per row
    pos: list[int]
    left: list[int]
    names: list[str]  # timeline tracks

    @classmethod
    def of(cls, run: Run) -> Central:
        costs, N = run.costs, run.shape.N
        return cls(step_s=(costs.env_per_vstep + costs.reset_per_vstep).tolist(),
                   pos=[c.pos for c in costs.env], left=[0] * N,
                   names=[f"actor {a}" for a in range(N)])


@dataclass
class _Server:
    """What one server's batches accumulate over a collection (seconds; actor-seconds for
    ``act_s``, ``wait_*`` and ``env_s``); ``last`` is when its last rollout was done."""

    last: float
    wait_inference_s: float = 0.0
    wait_cores_s: float = 0.0
    act_s: float = 0.0
    env_s: float = 0.0
    inference_s: float = 0.0
    steps: int = 0
    batches: int = 0


@dataclass(frozen=True)
class _Records:
    """Per-step timeline records, written in bulk (TimelineStream.columns)."""

    acts: Columns
    steps: Columns


def central_wave(run: Run, central: Central, r: np.ndarray):
    """One iteration's collection, actor a released at r[a]: a server process per
    inference device (actors split round-robin); returns when the last rollout is done."""
    env, t0 = run.m.env, float(r.min())
    cores: list = [t0] * run.roles.cores if run.m.timeline is None else \
        [(t0, k) for k in range(run.roles.cores)]  # FIFO lanes (with lane numbers)
    G, N = len(run.roles.servers), run.shape.N
    procs = [env.process(_serve(run, central, g, list(range(g, N, G)), r, cores))
             for g in range(G)]
    ends = yield env.all_of(procs)
    return max(ends.values())


def _serve(run: Run, central: Central, g: int, actors: list[int], r: np.ndarray,
           cores: list):
    """Server g's batches: each takes every actor waiting (heap by ready time)."""
    env, T, tl = run.m.env, run.shape.T, run.m.timeline
    name = f"inference server {g}"  # timeline tracks
    rec = None
    if tl is not None:
        rec = _Records(tl.columns(run.roles.cpu.name, "act", name, "batch"),
                       tl.columns(run.roles.cpu.name, "env_step", central.names))
    heap = [(float(r[a]), a) for a in actors]
    heapq.heapify(heap)
    for a in actors:
        central.left[a] = T + 1
    wall_s = run.costs.server.wall_s
    st = _Server(last=float(r.min()))
    while heap:
        now = env.now
        if heap[0][0] > now:
            t_ready = heap[0][0]
            yield env.timeout(t_ready - now)
            now = t_ready
        batch = _take_batch(heap, now, st)
        b = len(batch)
        end = _forward(run, g, name, now, b, cores, rec)
        st.inference_s += wall_s[b]
        st.act_s += (end - now) * b
        st.batches += 1
        yield env.timeout(end - now)
        _step(central, batch, end, cores, heap, st, rec)
    if rec is not None:  # bounded memory: written once they fill the stream's buffer
        tl.spill(rec.acts)
        tl.spill(rec.steps)
    _account(run, st, len(actors), on_cpu=run.roles.servers[g] is None)
    return st.last


def _take_batch(heap: list, now: float, st: _Server) -> list[int]:
    """Every actor whose request is ready by ``now``, in ready order."""
    batch = []
    wait = st.wait_inference_s
    while heap and heap[0][0] <= now:
        t_r, a = heapq.heappop(heap)
        wait += now - t_r
        batch.append(a)
    st.wait_inference_s = wait
    return batch


def _forward(run: Run, g: int, name: str, now: float, b: int, cores: list,
             rec: _Records | None) -> float:
    """One forward of b actors' observations from ``now``; returns when it is done. On a
    core: FIFO with the actors' steps; on a GPU: kernels and copies on it, the server's
    dispatch on a CPU core, queued with the learner's dispatch and the other bookings."""
    m, server = run.m, run.costs.server
    dur = server.wall_s[b]
    dev = run.roles.servers[g]
    if dev is None:
        if rec is None:
            f = cores[0]
            start = now if now > f else f
            end = start + dur
            heapq.heapreplace(cores, end)
        else:
            f, lane = cores[0]
            start = now if now > f else f
            end = start + dur
            heapq.heapreplace(cores, (end, lane))
            rec.acts.lane.append(lane)
            rec.acts.start_s.append(start)
            rec.acts.dur_s.append(dur)
            rec.acts.value.append(b)
        return end
    end = max(now + dur, m.book(dev, now, server.device_s[b], "act", name, batch=b))
    if server.host_s[b] > 0:
        end = max(end, m.book(run.roles.cpu, now, server.host_s[b], "dispatch", name,
                              batch=b))
    return end


def _step(central: Central, batch: list[int], now: float, cores: list, heap: list,
          st: _Server, rec: _Records | None) -> None:
    """Each served actor steps its envs on the first free core and submits again, unless
    its rollout is done (its bootstrap request was the last)."""
    left, pos, costs = central.left, central.pos, central.step_s
    n_costs = len(costs)
    heapreplace, heappush = heapq.heapreplace, heapq.heappush
    wait_cores, env_busy, steps, last = st.wait_cores_s, st.env_s, st.steps, st.last
    if rec is not None:
        s = rec.steps
        lane_, start_, dur_, who_ = s.lane.append, s.start_s.append, s.dur_s.append, \
            s.who.append
    for a in batch:
        n = left[a] - 1
        left[a] = n
        if n:
            p = pos[a]
            d = costs[p]
            p += 1
            pos[a] = p if p < n_costs else 0
            if rec is None:
                f = cores[0]
                start = now if now > f else f
                fin = start + d
                heapreplace(cores, fin)
            else:  # the same FIFO, with lane numbers for the Chrome trace
                f, lane = cores[0]
                start = now if now > f else f
                fin = start + d
                heapreplace(cores, (fin, lane))
                lane_(lane)
                start_(start)
                dur_(d)
                who_(a)
            wait_cores += start - now
            env_busy += d
            steps += 1
            heappush(heap, (fin, a))
        elif now > last:
            last = now
    st.wait_cores_s, st.env_s, st.steps, st.last = wait_cores, env_busy, steps, last


def _account(run: Run, st: _Server, n_actors: int, on_cpu: bool) -> None:
    """A server's collection into the run's tally (and a CPU server's forwards onto the
    CPU device: the lanes were the program's own)."""
    tally = run.tally
    reset_s = st.steps * run.costs.reset_per_vstep
    tally.busy["env_step"] += st.env_s - reset_s
    tally.busy["env_reset"] += reset_s
    tally.busy["act"] += st.act_s
    tally.act_count += n_actors * (run.shape.T + 1)
    tally.wait["wait:inference"] += st.wait_inference_s
    tally.wait["wait:cores"] += st.wait_cores_s
    tally.parts["inference_s"] += st.inference_s
    tally.batches += st.batches
    if on_cpu:
        run.roles.cpu.account("act", st.inference_s, st.batches)
