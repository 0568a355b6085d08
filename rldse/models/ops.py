"""OpColumns: a trace's operations as numpy columns, the input of every cost function.

Costing a million operations must be cheap, so part models never loop over rows: they
take whole columns. Phases and data types are small integer codes into ``PHASE_NAMES``
and ``DTYPE_NAMES``, so a per-phase parameter is one fancy-indexing lookup
(``per_phase(...)[ops.phase]``). Counts are float64: products of counts cannot overflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from rldse.errors import RldseError
from rldse.trace import DTYPES, PHASES

if TYPE_CHECKING:
    import pandas as pd

    from rldse.trace import TraceMeta

PHASE_NAMES: tuple[str, ...] = tuple(PHASES)
DTYPE_NAMES: tuple[str, ...] = tuple(DTYPES)
#: A phase name, for spec fields keyed by phase.
Phase = Literal[PHASE_NAMES]  # type: ignore[valid-type]

ArrayLike = float | int | Sequence[float] | np.ndarray


@dataclass(frozen=True, eq=False)
class OpColumns:
    """One entry per operation; all arrays have the same length."""

    phase: np.ndarray  # int8 codes into PHASE_NAMES
    dtype: np.ndarray  # int8 codes into DTYPE_NAMES
    items: np.ndarray  # float64: batch size, transitions or environments
    flops: np.ndarray  # float64: arithmetic operations
    bytes: np.ndarray  # float64: bytes read plus written
    touches: np.ndarray  # float64: irregular (data-dependent) memory accesses
    host_dur_s: np.ndarray  # float64: cost on the capture host (rldse.trace.host_cost_s)

    def __len__(self) -> int:
        return len(self.phase)

    @classmethod
    def from_frame(cls, ops: pd.DataFrame, meta: TraceMeta | None = None) -> OpColumns:
        """From a Trace's ops table (already validated by ``rldse.trace.normalize_ops``);
        the trace's ``meta`` says which rows waited rather than computed, for the host
        cost rule (``rldse.trace.host_cost_s``; None: every row computed)."""
        from rldse.trace import host_cost_s

        return cls(
            phase=_codes(ops["phase"], PHASE_NAMES, "phase"),
            dtype=_codes(ops["dtype"], DTYPE_NAMES, "dtype"),
            items=ops["items"].to_numpy(np.float64),
            flops=ops["flops"].to_numpy(np.float64),
            bytes=ops["bytes"].to_numpy(np.float64),
            touches=ops["touches"].to_numpy(np.float64),
            host_dur_s=host_cost_s(ops, meta),
        )

    @classmethod
    def of(cls, phase: str | Sequence[str], *, items: ArrayLike = 1, flops: ArrayLike = 0,
           bytes: ArrayLike = 0, touches: ArrayLike = 0, dtype: str | Sequence[str] = "fp32",
           host_dur_s: ArrayLike = 0.0) -> OpColumns:
        """Operations the engine makes up (no trace row): scalars broadcast to one length."""
        import pandas as pd  # on use: part models load for commands that read no trace

        cols = {"items": items, "flops": flops, "bytes": bytes, "touches": touches,
                "host_dur_s": host_dur_s}
        arrays = {k: np.atleast_1d(np.asarray(v, dtype=np.float64)) for k, v in cols.items()}
        phases = np.atleast_1d(np.asarray(phase, dtype=object))
        dtypes = np.atleast_1d(np.asarray(dtype, dtype=object))
        try:
            shape = np.broadcast_shapes(phases.shape, dtypes.shape,
                                        *(a.shape for a in arrays.values()))
        except ValueError:
            raise RldseError("ops: columns have different lengths") from None
        for name, a in arrays.items():
            if not np.all(np.isfinite(a)) or np.any(a < 0):
                raise RldseError(f"ops.{name}: must be finite and ≥ 0")
        return cls(
            phase=np.broadcast_to(_codes(pd.Series(phases), PHASE_NAMES, "phase"), shape),
            dtype=np.broadcast_to(_codes(pd.Series(dtypes), DTYPE_NAMES, "dtype"), shape),
            **{k: np.broadcast_to(a, shape) for k, a in arrays.items()},
        )


def per_phase(values: Mapping[str, float], default: float) -> np.ndarray:
    """A lookup table indexed by phase code: ``per_phase(v, 0.0)[ops.phase]``."""
    unknown = [k for k in values if k not in PHASES]
    if unknown:
        raise RldseError(f"phase '{unknown[0]}' is unknown (expected one of "
                         f"{', '.join(PHASE_NAMES)})")
    return np.array([float(values.get(p, default)) for p in PHASE_NAMES])


def _codes(values: pd.Series, vocab: tuple[str, ...], column: str) -> np.ndarray:
    import pandas as pd

    if isinstance(values.dtype, pd.CategoricalDtype):  # a trace's columns: map categories once
        cats = [str(c) for c in values.cat.categories]
        lookup = np.array([vocab.index(c) if c in vocab else -1 for c in cats] + [-1], np.int8)
        codes = lookup[values.cat.codes.to_numpy()]
    else:
        codes = pd.Index(vocab).get_indexer(values.astype(str)).astype(np.int8)
    if np.any(codes < 0):
        bad = values.astype(str).to_numpy()[np.flatnonzero(codes < 0)[0]]
        raise RldseError(f"ops.{column}: unknown value '{bad}' (expected one of "
                         f"{', '.join(vocab)})")
    return codes
