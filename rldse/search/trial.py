"""One trial: suggest a point, resolve its SystemSpec, look first (estimate), then simulate.

What each trial leaves in Optuna, so the trials table, the plots and optuna-dashboard
can say why a point wins or loses:

- parameters: the space's SystemSpec paths;
- values: the objectives' metrics (COMPLETE), or nothing (PRUNED);
- constraints (≤ 0 feasible; `rldse.search.constraints.store_violations`, where
  optuna-dashboard sees them): every constraint of the study file and every part check
  not skipped, on every simulated trial, and on pruned ones from the bound, so infeasible
  points are kept and marked;
- one user attribute, `rldse` (one storage write per trial; read it with `trial_attrs`),
  a JSON object with `spec` (the point's SystemSpec as written), `source` (simulated,
  cache, pruned, invalid), `estimate` (the analytic bounds), `metrics` (every scalar
  metric), `bottleneck`, `constraints` (each constraint's left-hand side), `note` (why a
  point was pruned or is invalid), and `worker` (host/pid that ran it). Studies written
  before kept each as its own user attribute; `trial_attrs` reads both.
"""

from __future__ import annotations

import math
import os
import socket
from typing import Any, NoReturn

import optuna
from optuna.trial import TrialState

from rldse.errors import RldseError
from rldse.search.cache import ResultCache
from rldse.search.constraints import SPEC, feasible, spec_value, store_violations
from rldse.search.estimate import Estimate, Incumbents, calibration, estimate, prune_reason
from rldse.search.metrics import metric_value
from rldse.search.study_file import StudyFile
from rldse.sim import simulate
from rldse.sim.budget import estimate as estimate_cost
from rldse.sim.budget import is_small
from rldse.sim.result import Result
from rldse.sim.target import check_same_learning, to_target, with_target
from rldse.system import ResolvedSystem, resolve

SIMULATED, CACHE, PRUNED, INVALID = "simulated", "cache", "pruned", "invalid"
#: the one user attribute a trial's record is written under
ATTRS = "rldse"


def trial_attrs(trial: optuna.trial.FrozenTrial | optuna.Trial) -> dict[str, Any]:
    """A trial's record (module docstring): the `rldse` attribute, or the separate user
    attributes of a study written before it."""
    ua = trial.user_attrs
    packed = ua.get(ATTRS)
    if not isinstance(packed, dict):
        return dict(ua)
    return {**{k: v for k, v in ua.items() if k != ATTRS}, **packed}


class TakenOver(Exception):
    """This worker's trial was failed (and re-queued) by another worker meanwhile."""


class TrialRunner:
    """The objective function Optuna calls (one per worker process)."""

    def __init__(self, study: StudyFile, cache: ResultCache) -> None:
        self.study = study
        self.cache = cache
        self.objectives = [(o.metric, o.direction) for o in study.objectives]
        #: the trial another worker failed and re-queued while this one ran it (a worker
        #: paused past the heartbeat grace period): its result is not this worker's to tell
        self.taken_over: int | None = None

    def __call__(self, trial: optuna.Trial) -> float | tuple[float, ...]:
        attrs: dict[str, Any] = {"worker": f"{socket.gethostname()}/{os.getpid()}"}
        try:
            return self._run(trial, attrs)
        finally:  # one storage write for the whole record, whatever the trial's outcome
            if trial.study._storage.get_trial(trial._trial_id).state != TrialState.RUNNING:
                self.taken_over = trial.number
                raise TakenOver(trial.number)
            trial.set_user_attr(ATTRS, attrs)

    def _run(self, trial: optuna.Trial, attrs: dict[str, Any]) -> float | tuple[float, ...]:
        space = self.study.search_space
        params = space.suggest(trial)
        trace = self.study.loaded_trace
        try:
            spec = space.spec(params, where="point")
            attrs["spec"] = spec.model_dump(mode="json", exclude_defaults=True)
            run_spec = spec if self.study.target is None else \
                to_target(spec, self.study.target_steps)  # run to the target (sim.target)
            system = resolve(run_spec, trace)  # once per trial: estimate, cache and simulation
            if self.study.target is not None:
                check_same_learning(trace, system)
            terms = self._spec_terms(system)
            est = estimate(trace, system)
        except RldseError as exc:
            return self._invalid(attrs, str(exc))
        attrs["estimate"] = est.values
        result = self.cache.get(trace.digest, system.digest, self.study.seed)
        source = CACHE
        if result is None:
            if self.study.estimate.prune:
                reason = prune_reason(est, self.objectives, self.study.parsed_constraints,
                                      terms, self._incumbents(trial.study),
                                      self.study.estimate.margin)
                if reason is not None:
                    return self._pruned(trial, attrs, est, terms, reason)
            try:
                if not is_small(trace, system):  # a long design is refused, never run blind
                    estimate_cost(trace, system, self.study.limits)  # refuses over them
                result = simulate(trace, system, seed=self.study.seed)
            except RldseError as exc:
                return self._invalid(attrs, str(exc))
            self.cache.put(result)
            source = SIMULATED
        if self.study.target is not None:
            result = with_target(result, self.study.target_steps, self.study.target.spec,
                                 spread=self.study.target_spread)
        return self._record(trial, attrs, result, terms, source)

    def _spec_terms(self, system: ResolvedSystem) -> dict[str, float]:
        names = {n for c in self.study.parsed_constraints for n in c.names if n.startswith(SPEC)}
        return {n: spec_value(system, n, "constraint") for n in names}

    def _record(self, trial: optuna.Trial, attrs: dict[str, Any], result: Result,
                terms: dict[str, float], source: str) -> float | tuple[float, ...]:
        metrics = result.metrics()
        file = self.study.file.name
        values = tuple(metric_value(metrics, m, f"{file}: objectives[{i}].{d}")
                       for i, (m, d) in enumerate(self.objectives))
        lhs = {}
        for i, con in enumerate(self.study.parsed_constraints):
            where = f"{file}: constraints[{i}]"
            lhs[con.text] = con.lhs(lambda n, w=where: terms[n] if n in terms
                                    else metric_value(metrics, n, w))
        store_violations(trial, [c.violation(lhs[c.text])
                                 for c in self.study.parsed_constraints])
        attrs.update(source=source, metrics=metrics, bottleneck=result.bottleneck)
        if lhs:
            attrs["constraints"] = lhs
        return values[0] if len(values) == 1 else values

    def _pruned(self, trial: optuna.Trial, attrs: dict[str, Any], est: Estimate,
                terms: dict[str, float], reason: str) -> NoReturn:
        store_violations(trial, [con.best_violation(con.lhs_interval(
            lambda n: (terms[n], terms[n]) if n in terms else est.interval(n)))
            for con in self.study.parsed_constraints])
        attrs.update(source=PRUNED, note=reason)
        if len(self.objectives) == 1:
            best = est.optimistic(*self.objectives[0])
            if math.isfinite(best):
                trial.report(best, step=0)  # ranks pruned points for TPE
        raise optuna.TrialPruned(reason)

    @staticmethod
    def _invalid(attrs: dict[str, Any], message: str) -> NoReturn:
        attrs.update(source=INVALID, note=message)
        raise optuna.TrialPruned(message)

    def _incumbents(self, study: optuna.Study) -> Incumbents:
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        records = [trial_attrs(t) for t in done]
        pairs = [(a["estimate"], a["metrics"]) for a in records
                 if "estimate" in a and "metrics" in a]
        return Incumbents([tuple(t.values) for t in done if feasible(t)], calibration(pairs))
