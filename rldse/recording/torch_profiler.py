"""Import a PyTorch-profiler (Kineto) Chrome-trace JSON as a Trace.

``torch.profiler.profile(record_shapes=True)`` exports every operator (``cat: cpu_op``)
with its input shapes and types, and every ``record_function`` scope
(``cat: user_annotation``); it has no FLOPs. A scope named after the phase vocabulary
(rldse.trace.PHASES: ``act``, ``learn``, ``env_step``, ...) is one row; other scopes are
ignored. A row's work is that of the operators that ran within it (any thread of the
process, by time):

- FLOPs of the matrix products and convolutions, from their input shapes, as
  ``torch.utils.flop_counter`` counts them (2 per multiply-add, bias adds not counted):
  ``mm``/``addmm`` 2·M·K·N, ``bmm``/``baddbmm`` 2·B·M·K·N, ``convolution`` 2·N·O·H'·W'·
  (C/g)·kh·kw with H', W' from the recorded stride, padding and dilation, and
  ``convolution_backward`` that once per gradient it computes (input, weight);
- bytes: the inputs of every outermost operator (the profiler does not record outputs),
  plus the outputs of the products and convolutions, whose shapes follow from the inputs.

``items`` is the batch: the rows of the first product's or convolution's first input.
The trace replays through the program of ``loop`` (rldse.recording.loops) with the
workload_info rldse.recording.info builds from the network's layer sizes and the
schedule hyperparameters given.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rldse.errors import RldseError
from rldse.trace import PHASES, Trace

#: Bytes per element of the profiler's "Input type" names.
TYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8,
              "int": 4, "short int": 2, "bool": 1, "unsigned char": 1, "signed char": 1}
_FP = {"float": "fp32", "double": "fp64"}


def _prod(dims: list[int]) -> int:
    return math.prod(int(d) for d in dims)


def _ints(text: str) -> list[int]:
    return [int(v) for v in json.loads(text)] if text else []


def _conv_out(inp: list[int], weight: list[int], concrete: list[str]) -> list[int]:
    """Output spatial sizes of a convolution from its stride, padding and dilation."""
    stride, pad, dil = (_ints(concrete[i]) for i in (3, 4, 5))
    return [(h + 2 * p - d * (k - 1) - 1) // s + 1
            for h, k, s, p, d in zip(inp[2:], weight[2:], stride, pad, dil, strict=True)]


def op_work(name: str, args: dict[str, Any]) -> tuple[int, int, int]:
    """(flops, output bytes, batch) of one product or convolution; (0, 0, 0) otherwise."""
    dims = args.get("Input Dims") or []
    types = args.get("Input type") or []
    size = TYPE_BYTES.get(types[0] if types else "float", 4)
    if name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
        a, b = (dims[1], dims[2]) if name in ("aten::addmm", "aten::baddbmm") else dims[:2]
        batch = _prod(a[:-2]) if len(a) > 2 else 1
        m, k, n = a[-2], a[-1], b[-1]
        return 2 * batch * m * k * n, size * batch * m * n, a[0]
    if name == "aten::convolution":
        inp, weight = dims[0], dims[1]
        out = _conv_out(inp, weight, args["Concrete Inputs"])
        macs = inp[0] * weight[0] * _prod(out) * _prod(weight[1:])
        return 2 * macs, size * inp[0] * weight[0] * _prod(out), inp[0]
    if name == "aten::convolution_backward":
        grad_out, inp, weight = dims[0], dims[1], dims[2]
        mask = json.loads(args["Concrete Inputs"][-1].lower())
        macs = grad_out[0] * grad_out[1] * _prod(grad_out[2:]) * _prod(weight[1:])
        written = (_prod(inp) if mask[0] else 0) + (_prod(weight) if mask[1] else 0)
        return 2 * macs * (int(mask[0]) + int(mask[1])), size * written, grad_out[0]
    return 0, 0, 0


def input_bytes(args: dict[str, Any]) -> int:
    dims = args.get("Input Dims") or []
    types = args.get("Input type") or []
    return sum(_prod(d) * TYPE_BYTES.get(t, 0) for d, t in zip(dims, types, strict=False) if d)


def read_events(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise RldseError(f"{path}: no such file")
    try:
        doc = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RldseError(f"{path}: not a JSON profiler trace ({exc})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise RldseError(f"{path}: no 'traceEvents' list (export it with "
                         "torch.profiler's export_chrome_trace)")
    return [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


def phase_rows(events: list[dict[str, Any]], where: str) -> list[tuple]:
    """One ops-table row (raw ns) per phase scope, with its operators' work."""
    scopes = sorted((e for e in events if e.get("cat") == "user_annotation"
                     and e.get("name") in PHASES), key=lambda e: e["ts"])
    if not scopes:
        raise RldseError(f"{where}: no record_function scope named after a phase (expected "
                         f"some of {', '.join(PHASES)})")
    ops = sorted((e for e in events if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
    if ops and not any(e.get("args", {}).get("Input Dims") for e in ops):
        raise RldseError(f"{where}: operators carry no input shapes (profile with "
                         "record_shapes=True)")
    counts = dict.fromkeys(PHASES, 0)
    rows = []
    for s in scopes:
        t0, t1 = s["ts"], s["ts"] + s["dur"]
        inside = [o for o in ops if t0 <= o["ts"] and o["ts"] + o["dur"] <= t1
                  and o.get("pid") == s.get("pid")]
        flops = nbytes = 0
        batch, fp = 0, "none"
        ends: dict[Any, float] = {}
        for o in inside:
            args = o.get("args", {})
            f, out_b, b = op_work(o["name"], args)
            flops, nbytes = flops + f, nbytes + out_b
            if f and not batch:
                batch = int(b)
                fp = _FP.get((args.get("Input type") or ["float"])[0], "fp32")
            if o["ts"] >= ends.get(o.get("tid"), -1.0):  # outermost on its thread
                nbytes += input_bytes(args)
                ends[o.get("tid")] = o["ts"] + o["dur"]
        name = s["name"]
        dtype = fp if flops else "fp64" if name.startswith("env") else "none"
        rows.append(("host", name, counts[name], round(t0 * 1000), round(s["dur"] * 1000),
                     batch or 1, flops, nbytes, 0, dtype))
        counts[name] += 1
    return rows


def import_torch_profiler(path: str | Path, *, loop: str, env_id: str, layers: list[int],
                          hyperparameters: dict[str, Any], seed: int = 0) -> Trace:
    """The Trace of a profiler JSON (module docstring); ``layers``: the network's sizes."""
    from rldse.recording.info import workload_info
    from rldse.recording.loops import loop_kind
    from rldse.recording.network import Network
    from rldse.workloads.common.base import build_trace
    from rldse.workloads.common.recorder import rows_to_frame

    where = str(path)
    kind = loop_kind(loop)
    if loop != "off_policy":
        raise RldseError(f"--loop {loop}: profiler import builds off_policy (one network) "
                         "traces; record other loops with rldse.recording")
    workload = kind.workload({"q"})
    # the arguments first: a profile takes minutes to parse
    info = workload_info(workload, {"q": Network(list(layers), where="--layers")},
                         hyperparameters)
    rows = phase_rows(read_events(path), where)
    origin = min(r[3] for r in rows)
    wall_s = (max(r[3] + r[4] for r in rows) - origin) / 1e9
    frame = rows_to_frame(rows, origin, 0.0)
    return build_trace(workload=workload, algorithm="torch_profiler", env_id=env_id,
                       seed=seed, hyperparameters={**hyperparameters, "source": Path(path).name},
                       workload_info=info, episode_returns=[], wall_time_s=wall_s,
                       frames=[frame], overhead_ns=0.0)
