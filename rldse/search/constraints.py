"""Constraints: `avg_power_w <= 1500`, `cost_usd <= 60000`, `gpu_memory_ok`,
`spec.pim.dimms + 2 * spec.cpu.sockets <= 24` (DIMM slots).

Every feasibility check a part kind declares (`rldse.models.all_checks()`: GPU memory,
TCAM capacity, host memory, ...) is a constraint of every study unless the study file
opts out of it by name (`skip_checks: [tcam_capacity]`): a design that does not fit its
machine is never recommended by default. A check of a part the design lacks holds.

A constraint is a linear sum of metrics and `spec.<path>` values (the resolved system,
part fields included) compared with a number, or a lone check that must be true. Its
Optuna value (feasible when ≤ 0) is the violation relative to the bound, so that power
in watts and cost in dollars weigh alike in samplers that sum violations. Because it is
linear, an interval per name (what the analytic estimate knows) gives an interval for
the left-hand side, which tells when a point is infeasible before it is simulated.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna

from rldse.errors import RldseError, did_you_mean
from rldse.models import all_checks
from rldse.search.metrics import metric_name
from rldse.sim.result import CHECK_PREFIX
from rldse.system import ResolvedSystem

_OPS = {ast.LtE: "<=", ast.Lt: "<=", ast.GtE: ">=", ast.Gt: ">="}
SPEC = "spec."

Interval = tuple[float, float]

#: The Optuna system attribute a trial's constraint values go in, as the list that
#: samplers' `constraints_func` writes: Optuna's samplers and `best_trials` read it
#: (`FrozenTrial.constraints`), and so does optuna-dashboard, which reads only this form
#: (`Trial.set_constraint`'s per-name keys leave its trials all drawn feasible).
CONSTRAINTS_ATTR = "constraints"


@dataclass(frozen=True)
class Constraint:
    text: str
    terms: tuple[tuple[float, str], ...]  # (coefficient, metric or spec.<path>)
    op: str | None  # '<=', '>=', or None: the lone metric must be true
    bound: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.terms)

    def lhs(self, value: Callable[[str], float]) -> float:
        return sum(c * value(name) for c, name in self.terms)

    def violation(self, lhs: float) -> float:
        """Optuna's constraint value: ≤ 0 when satisfied, relative to the bound."""
        if self.op is None:
            return 0.0 if lhs else 1.0
        excess = lhs - self.bound if self.op == "<=" else self.bound - lhs
        return excess / abs(self.bound) if self.bound else excess

    def lhs_interval(self, interval: Callable[[str], Interval]) -> Interval:
        lo = hi = 0.0
        for c, name in self.terms:
            a, b = interval(name)
            lo += c * a if c >= 0 else c * b
            hi += c * b if c >= 0 else c * a
        return lo, hi

    def best_violation(self, lhs: Interval) -> float:
        """The smallest violation any value in `lhs` can have (> 0: surely infeasible)."""
        if self.op is None:
            return 0.0 if lhs[1] > 0 else 1.0
        return self.violation(lhs[0] if self.op == "<=" else lhs[1])


def parse_constraint(text: str, where: str) -> Constraint:
    """Parse one constraint; RldseError names `where` (e.g. 'study.yaml: constraints[1]')."""
    if not isinstance(text, str) or not text.strip():
        raise RldseError(f"{where}: expected a string like 'avg_power_w <= 1500'")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise RldseError(f"{where}: '{text}' is not an expression like "
                         "'avg_power_w <= 1500'") from None
    if isinstance(tree, ast.Compare):
        if len(tree.ops) != 1 or type(tree.ops[0]) not in _OPS:
            raise RldseError(f"{where}: '{text}': use one of <=, <, >=, > once")
        bound = _number(tree.comparators[0])
        if bound is None:
            raise RldseError(f"{where}: '{text}': the right-hand side must be a number")
        terms, offset = _linear(tree.left, text, where)
        return Constraint(text, tuple(terms), _OPS[type(tree.ops[0])], bound - offset)
    name = _dotted(tree)
    if name is None:
        raise RldseError(f"{where}: '{text}': expected 'EXPR <= NUMBER', 'EXPR >= NUMBER' "
                         "or a metric that must be true (gpu_memory_ok)")
    metric = _checked(name, where)
    if not metric.startswith(CHECK_PREFIX):
        raise RldseError(f"{where}: '{text}' is a number, not true or false: give a bound "
                         f"('{name} <= NUMBER' or '>= NUMBER'); a lone name must be a check "
                         f"({', '.join(f'{n}_ok' for n in all_checks())})")
    return Constraint(text, ((1.0, metric),), None, 0.0)


def store_violations(trial: optuna.Trial, values: Sequence[float]) -> None:
    """Record a trial's constraint values (≤ 0 feasible), in the study's constraint order."""
    if not values:
        return
    trial.storage.set_trial_system_attr(trial._trial_id, CONSTRAINTS_ATTR,
                                        [float(v) for v in values])


def violations(trial: optuna.trial.FrozenTrial,
               constraints: Sequence[Constraint]) -> dict[str, float]:
    """A trial's stored constraint values by constraint text (none for a trial without)."""
    stored = trial.constraints
    return {c.text: stored[str(i)] for i, c in enumerate(constraints) if str(i) in stored}


def feasible(trial: optuna.trial.FrozenTrial) -> bool:
    """Optuna's rule: every stored constraint value ≤ 0."""
    return all(v <= 0 for v in trial.constraints.values())


def with_checks(constraints: list[Constraint], skip: list[str], where: str) -> list[Constraint]:
    """`constraints` followed by every declared check they do not already name, less those
    in `skip` (`where`: the study file's `skip_checks` key, for errors)."""
    known = list(all_checks())
    for i, name in enumerate(skip):
        if name not in known:
            raise RldseError(f"{where}[{i}]: unknown check '{name}'{did_you_mean(name, known)} "
                             f"(checks: {', '.join(known)})")
    if len(set(skip)) != len(skip):
        raise RldseError(f"{where}: a check appears twice ({', '.join(skip)})")
    named = {n for c in constraints for n in c.names}
    for name in skip:
        if f"{CHECK_PREFIX}{name}" in named:
            raise RldseError(f"{where}: '{name}' is skipped and also named in constraints: "
                             "keep one")
    extra = [f"{CHECK_PREFIX}{n}" for n in known if n not in skip
             and f"{CHECK_PREFIX}{n}" not in named]
    return [*constraints, *(Constraint(n, ((1.0, n),), None, 0.0) for n in extra)]


def _linear(node: ast.expr, text: str, where: str) -> tuple[list[tuple[float, str]], float]:
    """Terms and constant offset of a linear expression."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        lt, lo = _linear(node.left, text, where)
        rt, ro = _linear(node.right, text, where)
        sign = 1.0 if isinstance(node.op, ast.Add) else -1.0
        return lt + [(sign * c, n) for c, n in rt], lo + sign * ro
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        t, o = _linear(node.operand, text, where)
        return [(-c, n) for c, n in t], -o
    number = _number(node)
    if number is not None:
        return [], number
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
        left, right = _number(node.left), _number(node.right)
        if right is not None and right != 0:
            t, o = _linear(node.left, text, where)
            k = right if isinstance(node.op, ast.Mult) else 1.0 / right
            return [(k * c, n) for c, n in t], k * o
        if left is not None and isinstance(node.op, ast.Mult):
            t, o = _linear(node.right, text, where)
            return [(left * c, n) for c, n in t], left * o
    name = _dotted(node)
    if name is None:
        raise RldseError(f"{where}: '{text}': only sums of metrics and spec.<path> values "
                         "times numbers are allowed")
    return [(1.0, _checked(name, where))], 0.0


def _checked(name: str, where: str) -> str:
    if name.startswith(SPEC):
        return name
    return metric_name(name, where)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _number(node: ast.expr) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) \
            and not isinstance(node.value, bool) and math.isfinite(node.value):
        return float(node.value)
    return None


def spec_value(system: ResolvedSystem, name: str, where: str) -> float:
    """The number at `spec.<path>`: a SystemSpec field, or a field of a resolved part
    (`spec.pim.dimms` reads the preset's value when the spec does not override it), or a
    resolved knob (`spec.workload.actors` is the trace's when the spec leaves it unset)."""
    path = name.removeprefix(SPEC).split(".")
    parts = {"workload": system.knobs} if path[0] == "workload" else system.specs
    node: Any = system.spec
    for i, key in enumerate(path):
        if i == 1 and path[0] in parts and (path[0] == "workload" or not hasattr(node, key)):
            node = parts[path[0]]
        if node is None or not hasattr(node, key):
            raise RldseError(f"{where}: '{name}': the system has no field "
                             f"'{'.'.join(path[:i + 1])}'")
        node = getattr(node, key)
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise RldseError(f"{where}: '{name}' is {node!r}, not a number")
    return float(node)
