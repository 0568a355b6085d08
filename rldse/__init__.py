"""rldse: discrete-event architecture simulator for RL systems design-space exploration.

Public API: `capture` (real training -> Trace) and `load_trace`.
"""

from rldse.errors import RldseError
from rldse.trace import Trace, load_trace
from rldse.workloads import capture
from rldse.workloads.base import CaptureConfig

__all__ = ["CaptureConfig", "RldseError", "Trace", "capture", "load_trace"]
__version__ = "0.1.0"
