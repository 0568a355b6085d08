"""Record your own training: ``with rldse.recording(path, loop=..., env_id=...,
network=...) as rec:`` and ``with rec.phase("learn"):`` around each operation
(rldse.recording.session); ``loop`` picks the simulated program (loops.py), the network
gives the work counts (network.py) and the program's shapes (info.py).

``rldse.recording`` is both this package and the function: importing a submodule binds the
package to ``rldse.recording``, so the package itself is made callable, and
``rldse.recording(...)`` means the same whatever was imported first.
"""

import sys
import types

from rldse.recording.session import Recording, recording

__all__ = ["Recording", "recording"]


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return recording(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
