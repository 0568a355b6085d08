"""The off-policy loop on the timeline. With ``--timeline`` the merged paths stay on (a
run's result is the same with or without one) and write at the granularity they compute,
as arrays (TimelineStream.extend).
Without ``--timeline-window``: per actor, one "rollout" event per tile of about
COARSE_STEPS of its env steps on its own core (sync: tiles end after a round with
updates, so a rollout spans its chunks and its waits for the learner between them;
async: its chunks run back to back), args ``steps`` and its busy seconds by phase
(``env_step_us``, ``replay_add_us`` when actors insert, ``act_us`` or ``dispatch_us``
and the kernels' ``act_us``); per learner and replay manager, one "updates" event per
tile of updates on lane 0 of its device, args ``updates`` and its drives' seconds by
phase (``learn_us``, ``replay_sample_us``, …, the host part as ``dispatch_us``). With a
window, only the chunks and updates overlapping it are written, one by one as the
event loop books them: each chunk's parts (env steps, inserts, the act or its dispatch)
on its actor's core and its kernels on the GPU, and each drive of an update (a sync
round's updates merged into one event per drive, args ``items``: its updates) on lane 0
of its device, its host part on the CPU as dispatch. The event loop (unmerged cases)
books every chunk and update whatever the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rldse.sim.device import Device
from rldse.sim.timeline import COARSE_STEPS, TimelineStream, tile_starts
from rldse.workloads.offpolicy.program.costs import sliced


@dataclass
class TimelineView:
    """Where the loop's workers show: actors on their cores (and their kernels on the
    GPU), the learner and RM on lane 0 of their devices. ``drives``: the learner's drives
    of the block being merged, (device, phase, worker, host, device and wall seconds)."""

    tl: TimelineStream
    cpu: Device
    gpu: Device | None
    act_kernels: bool
    actors_insert: bool
    learner_dev: Device
    rm: Device
    actor_names: list[str]
    drives: list[tuple] = field(default_factory=list)

    @property
    def window_s(self) -> tuple[float, float] | None:
        return self.tl.window_s

    def chunks(self, a: int, t0: np.ndarray, items, env_s: np.ndarray, add_s, core_s,
               kernels_s, gpu_t0) -> None:
        """Actor a's merged chunks as actor_chunk books them: its core's booking in parts
        (env steps, inserts, the act or its dispatch) on core lane a (its own core), and
        its kernels on the GPU from ``gpu_t0``."""
        t, items = t0, np.broadcast_to(items, t0.shape)
        for phase, dur in (("env_step", env_s), ("replay_add", add_s),
                           ("dispatch" if self.act_kernels else "act", core_s)):
            dur = np.broadcast_to(dur, t0.shape)
            keep = dur > 0
            self.tl.extend(self.cpu.name, phase, a, t[keep], dur[keep], self.actor_names[a],
                           args={"items": items[keep]})
            t = t + dur
        if self.act_kernels:
            keep = kernels_s > 0
            self.tl.extend(self.gpu.name, "act", a % self.gpu.lanes, gpu_t0[keep],
                           kernels_s[keep], self.actor_names[a], args={"items": items[keep]})

    def drive(self, dev: Device, phase: str, worker: str, h: np.ndarray, d: np.ndarray,
              t: np.ndarray, updates: np.ndarray) -> None:
        """Merged drives (Machine.drive) from times t: the device part on lane 0 of dev,
        the host part on the worker's core as 'dispatch'; args: items, the updates each
        event stands for."""
        for on, part, ph in ((dev, d, phase), (self.cpu, h, "dispatch")):
            keep = part > 0
            if keep.any():
                self.tl.extend(on.name, ph, 0, t[keep], part[keep], worker,
                               args={"items": updates[keep]})

    def rollouts(self, a: int, cuts: np.ndarray, t0: np.ndarray, t1: np.ndarray, steps,
                 env_s: np.ndarray, add_s, core_s: np.ndarray, kernels_s: np.ndarray) -> None:
        """Actor a's operations in tiles starting at ``cuts``, one "rollout" event per tile
        on its core lane, from t0 to t1 (its own waits included); args: the env steps it
        covers and its busy seconds by phase, summed."""
        n = len(env_s)
        parts = [("env_step_us", env_s), ("replay_add_us", add_s) if self.actors_insert
                 else None, ("dispatch_us" if self.act_kernels else "act_us", core_s),
                 ("act_us", kernels_s) if self.act_kernels else None]
        args = {"steps": np.asarray(steps)}
        for name, x in filter(None, parts):
            args[name] = np.add.reduceat(np.broadcast_to(x, (n,)), cuts)
        self.tl.extend(self.cpu.name, "rollout", a, t0, t1 - t0, self.actor_names[a],
                       args=args)

    def updates(self, t0: np.ndarray, t1: np.ndarray, updates: np.ndarray,
                sums: list[tuple]) -> None:
        """Tiles of learner updates, from t0 (the first's start) to t1 (the last's end):
        per worker one "updates" event per tile on lane 0 of its device; args: the
        updates and its drives' device seconds by phase, their host part as dispatch
        (``sums``: per drive its phase, worker and per-tile host and device seconds)."""
        by_worker: dict[str, dict] = {}
        for phase, worker, h, d in sums:
            args = by_worker.setdefault(worker, {"updates": updates})
            for name, x in ((f"{phase}_us", d), ("dispatch_us", h)):
                if x.any():
                    args[name] = args.get(name, 0.0) + x
        for worker, args in by_worker.items():
            dev = self.learner_dev if worker == "learner" else self.rm
            self.tl.extend(dev.name, "updates", 0, t0, t1 - t0, worker, args=args)

    def tile_sums(self, cuts: np.ndarray, n: int) -> list[tuple]:
        """The drives' host and device seconds summed over tiles of operations starting
        at ``cuts`` (a drive's arrays: one entry per operation of n, or a number each)."""
        return [(phase, worker, *(np.add.reduceat(np.broadcast_to(x, (n,)), cuts)
                                  for x in (h, d))) for _, phase, worker, h, d, _ in self.drives]

    def in_window(self, t0: np.ndarray, t1: np.ndarray) -> slice:
        """The operations (from t0 to t1, both nondecreasing) that overlap the window."""
        lo, hi = self.tl.window_s
        return slice(int(np.searchsorted(t1, lo, side="left")),
                     int(np.searchsorted(t0, hi, side="left")))

    def rounds(self, t0: np.ndarray, t1: np.ndarray, span: np.ndarray, c: int,
               chunks: list[tuple], U: np.ndarray, r_upd) -> None:
        """Merged sync rounds (from t0 to t1; span: the actors' part; r_upd: the rounds with
        updates, or None). With a window, the rounds overlapping it as the event loop books
        them; without, tiles of rounds (rounds_tiled)."""
        if self.window_s is None:
            self._rounds_tiled(t0, t1, span, c, chunks, U, r_upd)
            return
        R = len(t0)
        sl = self.in_window(t0, t1)
        for a, env_s, add_s, core_s, kernels_s, gpu_off, _ in chunks:
            self.chunks(a, t0[sl], c, env_s[sl], sliced(add_s, sl), core_s[sl],
                        kernels_s[sl], t0[sl] + sliced(gpu_off, sl))
        if r_upd is None:
            return
        keep = (r_upd >= sl.start) & (r_upd < sl.stop)
        at = r_upd[keep]
        t = (t0 + span)[at]
        for dev, phase, worker, h, d, w in self.drives:  # one after another
            h, d, w = ((x[at] if len(x) == R else x[keep]) for x in (h, d, w))
            self.drive(dev, phase, worker, h, d, t, U[at])
            t = t + w

    def _rounds_tiled(self, t0: np.ndarray, t1: np.ndarray, span: np.ndarray, c: int,
                      chunks: list[tuple], U: np.ndarray, r_upd) -> None:
        """Tiles of rounds, ending after a round with updates where one does: per actor a
        rollout, and the learner's updates (``updates``)."""
        R = len(t0)
        cuts = tile_starts(np.full(R, c), COARSE_STEPS, None if r_upd is None else r_upd + 1)
        last = np.append(cuts[1:], R) - 1
        for a, env_s, add_s, core_s, kernels_s, _, end in chunks:
            self.rollouts(a, cuts, t0[cuts], t0[last] + end[last], c * (last - cuts + 1),
                          env_s, add_s, core_s, kernels_s)
        if r_upd is None:
            return
        # the learner's tiles: those with updates, from the first round with updates to
        # the last; drives' arrays are per round (0 in rounds without) or per r_upd
        n_tile = np.add.reduceat(U, cuts)
        has = n_tile > 0
        first = np.searchsorted(r_upd, cuts[has])  # as indices into r_upd
        r0 = r_upd[first]
        r1 = r_upd[np.searchsorted(r_upd, last[has], side="right") - 1]
        sums = [(phase, worker, *(np.add.reduceat(x, cuts)[has] if len(x) == R
                                  else np.add.reduceat(x, first) for x in (h, d)))
                for _, phase, worker, h, d, _ in self.drives]
        self.updates(t0[r0] + span[r0], t1[r1], n_tile[has], sums)
