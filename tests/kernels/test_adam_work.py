"""Adam's counted work (rldse.kernels.mlp.adam_work) against the numpy kernels
`Adam.step` really runs: every ufunc call is counted on the arrays it touches, so a kernel
dropped from (or added to) the count, or from the step, fails here."""

from __future__ import annotations

import numpy as np

from rldse.kernels.mlp import Adam, adam_work


class _Counted(np.ndarray):
    calls = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _Counted.calls += 1
        plain = [x.view(np.ndarray) if isinstance(x, _Counted) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, _Counted) else x
                                  for x in kwargs["out"])
        out = getattr(ufunc, method)(*plain, **kwargs)
        return out.view(_Counted) if isinstance(out, np.ndarray) else out


def test_adam_calls_are_the_kernels_its_step_runs():
    shapes = [(4, 8), (8,), (8, 2), (2,)]
    params = [np.ones(s, dtype=np.float32).view(_Counted) for s in shapes]
    grads = [np.full(s, 0.5, dtype=np.float32).view(_Counted) for s in shapes]
    opt = Adam(params)
    _Counted.calls = 0
    opt.step(grads)
    n_params = sum(int(np.prod(s)) for s in shapes)
    assert _Counted.calls == adam_work(n_params, len(shapes)).calls
