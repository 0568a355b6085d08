"""rldse: discrete-event architecture simulator for RL systems design-space exploration.

Public API: `capture` (real training -> Trace), `load_trace`, `simulate` (Trace on a
SystemSpec -> Result), `load_spec`, `search` (an Optuna study over SystemSpec paths) and `recording` (a user's
own training loop -> Trace).
Imported lazily, so `import rldse` (and every CLI call) does not load SimPy, Optuna or
Gymnasium until they are used.
"""

from importlib import import_module

from rldse.errors import RldseError

__version__ = "0.1.0"

_API = {
    "CaptureConfig": ("rldse.workloads.common.base", "CaptureConfig"),
    "capture": ("rldse.workloads", "capture"),
    "Trace": ("rldse.trace", "Trace"),
    "load_trace": ("rldse.trace", "load_trace"),
    "SystemSpec": ("rldse.system", "SystemSpec"),
    "load_spec": ("rldse.system", "load_spec"),
    "simulate": ("rldse.sim", "simulate"),
    "search": ("rldse.search", "run_study"),
    "recording": ("rldse.recording", "recording"),
}
__all__ = ["RldseError", *_API]


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'rldse' has no attribute {name!r}")
    module, attr = _API[name]
    return getattr(import_module(module), attr)
