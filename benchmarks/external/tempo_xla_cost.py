"""XLA's own cost analysis of every jitted call Tempo-JAX makes per time step of REINFORCE.

Runs Tempo's REINFORCE through ``benchmarks/external/tempo_call_count.py`` (same checkout, shims
and scaled storage thresholds) and, before every counted jitted call, lowers and compiles
that call for its arguments (``jitted.lower(*args).compile()``, cached per function and
argument shapes) and adds the executable's ``cost_analysis()`` -- 'flops' and 'bytes
accessed' (XLA's HloCostAnalysis: every top-level instruction's operands read and output
written, a fusion counted once) -- and ``memory_analysis()``'s argument and output bytes to
the loop trip the call runs in. Prints, per loop of the schedule, the per-trip sums; with
``--sweep`` it runs TD n = 1, n = 8 and Monte-Carlo over several (envs, side) points,
writes them as CSV and fits bytes and flops per time step (all loops of an iteration
summed per trip) as a + b · envs · 3·side² by least squares, with residuals, and the
extrapolation to the full 256 × 3×256×256 run. The fit feeds
``rldse.workloads.timerl.program.TEMPO_STEP_XLA``.

XLA here is the CPU backend (jaxlib 0.6.2 has no GPU on this host): its fusion decisions
are the CPU compiler's, which can differ from what XLA:GPU fuses on the A6000.

Bytes are also reported without the reduction-only intermediates XLA:CPU writes
(``reduction_bytes``: Tempo's per-sample gradient products, which XLA:GPU would fuse into
their reductions). Tempo's thresholds are scaled as ``tempo_call_count.py --scale-inc``
does, so the backward is incrementalized per step as in the full run; 100 steps give the
same per-step counts as 1000 (checked at 256 × 3×8×8: 47.49 MB per TD step at both).

Needs the Python of ``tempo_call_count.py`` (jax==0.6.2, islpy, gymnasium, gym, torch, ...)
and a Tempo checkout. Not run by the tests. The sweep behind TEMPO_STEP_XLA (about 25 min
on 2 cores; run objectives in two processes to halve it):

    python benchmarks/external/tempo_xla_cost.py --tempo /tmp/tempo --sweep --objectives 1,8,mc \\
        --points 256x8,256x16,256x32,256x48 --steps 100 --iterations 3 \\
        --csv /tmp/tempo_xla_cost.csv
    python benchmarks/external/tempo_xla_cost.py --fit-only --csv /tmp/tempo_xla_cost.csv

A flag of another mode (one run, ``--sweep``, ``--fit-only``) is refused. Rollouts much
shorter than 100 steps fail inside Tempo's incrementalization at a16e081 ("already inced"
at 20 steps, with the thresholds scaled).
"""

from __future__ import annotations

import argparse
import collections
import csv
import math
import multiprocessing as mp
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tempo_call_count  # noqa: E402

FULL_STEP_FEATURES = 256 * 3 * 256 * 256
#: per call: jitted calls, XLA's flops and bytes accessed, memory_analysis' argument and
#: output bytes, and the bytes of reduction-only intermediates (see ``reduction_bytes``)
KEYS = ("jit", "flops", "bytes", "red_bytes", "arg_bytes", "out_bytes")
DUMP_DIR: Path | None = None  # --dump-hlo: each compiled executable's optimised HLO
_DT = {"f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2, "pred": 1, "s64": 8, "f64": 8,
       "u8": 1, "s8": 1}


def _shape_bytes(s: str) -> int:
    m = re.match(r"(\w+)\[([\d,]*)\]", s)
    if not m or m.group(1) not in _DT:
        return 0
    return math.prod(int(d) for d in m.group(2).split(",") if d) * _DT[m.group(1)]


def _closing(text: str, depth: int) -> int:
    """Index of the parenthesis that brings ``depth`` (open ones before text) to 0."""
    for j, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return j
    return len(text)


def _entry(text: str) -> list[tuple[str, str, str, list[str], str]]:
    """(name, shape, opcode, operands, attributes) of the ENTRY computation's instructions."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("ENTRY"))
    out = []
    for line in lines[start + 1:]:
        if line.startswith("}"):
            break
        line = line.strip().removeprefix("ROOT ")
        name, rest = line.split(" = ", 1)
        if rest.startswith("("):  # tuple shape
            j = _closing(rest, 0)
            shape, rest = rest[:j + 1], rest[j + 2:]
        else:
            shape, rest = rest.split(" ", 1)
        op = rest.split("(", 1)[0]
        args = rest[len(op) + 1:]
        j = _closing(args, 1)
        out.append((name, shape, op, re.findall(r"%[\w.\-]+", args[:j]), args[j + 1:]))
    return out


def reduction_bytes(text: str) -> int:
    """Bytes XLA:CPU's executable moves for intermediates that exist only to be reduced: an
    elementwise producer (a loop fusion, or XLA:CPU's parallel call of one) or a partial
    reduce-window, every user of which is a reduction. Each is written once and read once
    (2 x its size). XLA:GPU fuses elementwise producers into their reduction (a reduction
    input fusion), so there these bytes would not reach memory; this separates them."""
    ins = _entry(text)
    users: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    for _name, _shape, op, operands, attrs in ins:
        for o in operands:
            users[o].append((op, attrs))

    def reduction(op: str, attrs: str) -> bool:
        return op in ("reduce", "reduce-window") or (
            op == "call" and "to_apply=%parallel_reduce" in attrs)

    total = 0
    for name, shape, op, _operands, attrs in ins:
        producer = (op == "fusion" and "kind=kLoop" in attrs) or op in (
            "broadcast", "multiply") or (op == "call" and "to_apply=%parallel_" in attrs
                                         and "to_apply=%parallel_reduce" not in attrs)
        window = op == "reduce-window" or (
            op == "call" and "to_apply=%parallel_reduce-window" in attrs)
        us = users.get(name, [])
        if us and (producer or window) and all(reduction(*u) for u in us):
            total += 2 * _shape_bytes(shape)
    return total


def _shapes(leaves) -> str:
    """Argument shapes, runs of the same shape collapsed."""
    out: list[str] = []
    for s in leaves:
        if not isinstance(s, tuple):
            continue
        txt = "x".join(map(str, s[0])) or "()"
        if out and out[-1].split("*")[0] == txt:
            n = int(out[-1].split("*")[1]) if "*" in out[-1] else 1
            out[-1] = f"{txt}*{n + 1}"
        else:
            out.append(txt)
    return "(" + ",".join(out) + ")"


def _cost_hook(total: collections.Counter):
    import jax

    cache: dict = {}

    def on_jit(f, args, kw, counter):
        leaves, tree = jax.tree_util.tree_flatten((args, kw))
        k = (id(f), tree, tuple((tuple(x.shape), str(x.dtype)) if hasattr(x, "shape")
                                else repr(x) for x in leaves))
        if k not in cache:
            compiled = f.lower(*args, **kw).compile()
            ca = compiled.cost_analysis()
            if isinstance(ca, (list, tuple)):
                ca = ca[0] if ca else {}
            ca = ca or {}
            ma = compiled.memory_analysis()
            text = compiled.as_text()
            name = getattr(getattr(f, "__wrapped__", f), "__name__", "?")
            if DUMP_DIR is not None:
                DUMP_DIR.mkdir(parents=True, exist_ok=True)
                (DUMP_DIR / f"{len(cache):03d}_{name.strip('<>')}.hlo.txt").write_text(
                    f"# cost {ca.get('bytes accessed')} bytes {ca.get('flops')} flops\n"
                    + text)
            cache[k] = {"jit": 1, "flops": float(ca.get("flops", 0.0)),
                        "bytes": float(ca.get("bytes accessed", 0.0)),
                        "red_bytes": float(reduction_bytes(text)),
                        "arg_bytes": float(getattr(ma, "argument_size_in_bytes", 0) or 0),
                        "out_bytes": float(getattr(ma, "output_size_in_bytes", 0) or 0),
                        "name": f"{name}{_shapes(k[2])}"}
        c = cache[k]
        for kk in KEYS[1:]:
            counter[kk] += c[kk]
        for kk in KEYS:
            total[kk] += c[kk]
        counter["bytes|" + c["name"]] += c["bytes"]
        counter["red_bytes|" + c["name"]] += c["red_bytes"]

    return on_jit


def measure(tempo: Path, objective: str, envs: int, side: int, steps: int,
            iterations: int, out: Path, scale_inc: bool = True) -> dict:
    """One Tempo run. ``period``: everything counted between Tempo's stats records of
    iterations 0 and 1 -- one steady-state iteration, the backward included (Tempo drops
    the last iteration's backward, whose update nothing reads: use 3 iterations);
    ``loops``: per-trip sums of every time loop."""
    a = argparse.Namespace(tempo=tempo, objective=objective, envs=envs, steps=steps,
                           side=side, iterations=iterations, out=out, scale_inc=scale_inc)
    total: collections.Counter = collections.Counter()
    marks: list[dict] = []
    loops = tempo_call_count.run(a, on_jit=_cost_hook(total),
                                 on_log=lambda d: marks.append(dict(total)))
    period = {k: marks[1].get(k, 0.0) - marks[0].get(k, 0.0) for k in KEYS} \
        if len(marks) >= 2 else {}
    detail = {name: (trips, {k: v / trips for k, v in c.items()})
              for name, (trips, c) in loops.items()}
    acting = [c for name, (trips, c) in detail.items()
              if name.startswith("loop") and any(k.startswith("bytes|_step") for k in c)]
    return {"loops": detail, "period": period, "acting": acting[0] if acting else {}}


def _child(q, *args):
    try:
        q.put(measure(*args))
    except BaseException as e:  # noqa: BLE001
        import traceback
        q.put({"error": f"{e!r}\n{traceback.format_exc()}"})


def measure_isolated(*args) -> dict:
    """``measure`` in a fresh process (Tempo's context and jax's caches are global)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, *args))
    p.start()
    r = q.get()
    p.join()
    if "error" in r:
        raise RuntimeError(r["error"])
    return r


def row_of(obj: str, envs: int, side: int, steps: int, r: dict) -> dict:
    """Per time step: the steady iteration's sums / steps; the acting loop's trip; their
    difference (the backward's share, and the iteration's other work)."""
    row = {"objective": obj, "envs": envs, "side": side, "steps": steps,
           "step_features": envs * 3 * side * side}
    for k in KEYS:
        row[f"step_{k}"] = r["period"].get(k, 0.0) / steps
        row[f"act_{k}"] = r["acting"].get(k, 0.0)
        row[f"rest_{k}"] = row[f"step_{k}"] - row[f"act_{k}"]
    return with_fused(row)


def with_fused(row: dict) -> dict:
    """Bytes without the reduction-only intermediates (XLA:GPU's reduction input fusion)."""
    for p in ("step", "act", "rest"):
        row[f"{p}_fused_bytes"] = row[f"{p}_bytes"] - row[f"{p}_red_bytes"]
    return row


def fit(rows: list[dict], key: str) -> tuple[float, float, list[float]]:
    import numpy as np
    x = np.array([r["step_features"] for r in rows], float)
    y = np.array([r[key] for r in rows], float)
    (c0, c1), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y, rcond=None)
    return float(c0), float(c1), list(y - (c0 + c1 * x))


def report_fits(rows: list[dict]) -> None:
    for obj in dict.fromkeys(r["objective"] for r in rows):
        sub = [r for r in rows if r["objective"] == obj]
        for key in ("step_jit", "act_jit", "step_bytes", "step_red_bytes",
                    "step_fused_bytes", "act_bytes", "act_fused_bytes", "rest_bytes",
                    "rest_red_bytes", "rest_fused_bytes", "step_flops", "act_flops",
                    "rest_flops"):
            c0, c1, res = fit(sub, key)
            rel = max((abs(v) / abs(r[key]) for v, r in zip(res, sub, strict=True)
                       if r[key]), default=0.0)
            print(f"{obj:>3} {key:>15} = {c0:12.6g} + {c1:10.6g} * envs*3*side^2;"
                  f" max |residual|/value {rel:.1e}; at 256x3x256x256: "
                  f"{c0 + c1 * FULL_STEP_FEATURES:.6g}")


#: Flags of one mode each (``refuse`` names any given outside its mode), and the single
#: run's defaults.
SINGLE = {"objective": "1", "envs": 256, "side": 8}
SWEEP = {"objectives": "1,8,mc", "points": "256x8,256x16,256x32,256x48"}
RUN = ("tempo", "steps", "iterations", "out", "dump_hlo")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tempo", type=Path, help="a Tempo source checkout (not with --fit-only)")
    ap.add_argument("--objective", help="'mc' or the TD n (one run; default 1)")
    ap.add_argument("--envs", type=int, help="one run (default 256)")
    ap.add_argument("--side", type=int, help="one run (default 8)")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--objectives", help="with --sweep (default 1,8,mc)")
    ap.add_argument("--points", help="with --sweep: envs x side, comma separated "
                    "(default 256x8,256x16,256x32,256x48)")
    ap.add_argument("--csv", type=Path, default=Path("/tmp/tempo_xla_cost.csv"))
    ap.add_argument("--fit-only", action="store_true", help="refit an existing --csv")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--dump-hlo", type=Path, default=None)
    a = ap.parse_args()
    mode = "--fit-only" if a.fit_only else "--sweep" if a.sweep else "one run"
    refuse(a, mode, [*SINGLE, *SWEEP, *RUN, "sweep"] if a.fit_only
           else [*SINGLE] if a.sweep else [*SWEEP])
    if a.fit_only:
        if not a.csv.is_file():
            sys.exit(f"tempo_xla_cost: --csv {a.csv}: no such file (write it with --sweep)")
        with a.csv.open() as fh:
            rows = [with_fused({k: (v if k == "objective" else float(v))
                                for k, v in r.items()}) for r in csv.DictReader(fh)]
        report_fits(rows)
        return
    if a.tempo is None:
        sys.exit(f"tempo_xla_cost: {mode} needs --tempo (a Tempo checkout)")
    tempo_call_count.check_setup("tempo_xla_cost", a.tempo)
    steps, iterations = a.steps or 100, a.iterations or 3
    out = a.out or Path("/tmp/tempo_xla_cost")
    global DUMP_DIR
    DUMP_DIR = a.dump_hlo
    if not a.sweep:
        single = {k: SINGLE[k] if getattr(a, k) is None else getattr(a, k) for k in SINGLE}
        r = measure(a.tempo, single["objective"], single["envs"], single["side"], steps,
                    iterations, out)
        for name, (trips, c) in r["loops"].items():
            print(f"{name}: {trips} trips; per trip " + ", ".join(
                f"{k} {c.get(k, 0):.4g}" for k in KEYS))
            for k, v in sorted(c.items()):
                if k.startswith("bytes|") and v:
                    print(f"    {k}: {v:.4g} (reduction-only {c['red_' + k]:.4g})")
        print("per time step:", row_of(single["objective"], single["envs"], single["side"],
                                       steps, r))
        return
    rows = []
    for pt in (a.points or SWEEP["points"]).split(","):
        envs, side = (int(v) for v in pt.split("x"))
        for obj in (a.objectives or SWEEP["objectives"]).split(","):
            r = measure_isolated(a.tempo, obj, envs, side, steps, iterations, out)
            rows.append(row_of(obj, envs, side, steps, r))
            print(rows[-1], flush=True)
            a.csv.parent.mkdir(parents=True, exist_ok=True)
            with a.csv.open("w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
    report_fits(rows)


def refuse(a: argparse.Namespace, mode: str, names: list[str]) -> None:
    """Exit with one line if a flag of another mode was given."""
    given = [n for n in names if getattr(a, n) not in (None, False)]
    if given:
        sys.exit(f"tempo_xla_cost: --{given[0].replace('_', '-')} does not apply to {mode}")


if __name__ == "__main__":
    main()
