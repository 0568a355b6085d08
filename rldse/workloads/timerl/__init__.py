"""TimeRL's (Tempo's) single-process on-GPU program: REINFORCE and PPO with the environment
on the GPU, one process issuing every kernel (``program``).

It registers no workload family: a family is a trace's ``workload`` (capture, typed Info,
knobs, a ``program(machine)`` that replays the trace's rows), and Tempo runs under JAX,
which rldse does not capture. There is nothing for ``rldse capture`` to run or a trace to
name, so no name is listed there (``rldse capture timerl`` is refused as an unknown
workload, naming those there are). Its program is costed from XLA's counted work on the
part a Machine places for ``learn`` (``program.stream``), scheduled in closed form
(``program.schedule``) or booked operation by operation on the Machine
(``program.events``); the timerl_memory study drives it.
"""
