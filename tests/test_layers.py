"""Imports only point down, and no import loops: the layer contract, declared once here.

Every module of rldse belongs to the layer whose pattern names it most precisely (the
pattern with the most literal characters; ``*`` is one dotted name or a part of one,
``**`` any number of them). A module may import its own layer or any layer below it, at
the top of a file or inside a function alike; ``if TYPE_CHECKING:`` imports count too
(an annotation that names a module above is still an arrow up). No loop may run: the
imports that execute form no cycle (a type-only import back, such as a cost helper naming
the model class it serves, loads nothing). Plug-ins (workload
families, part kinds) are found by name at run time, which is what lets a low registry
hold plug-ins written above it.

The graph is read with ``ast`` from the source files, so the check imports nothing and
takes well under a second. import-linter's layers contract would need every family's
modules listed by name (its layers take no wildcards), so a new family would have to edit
the contract; here one pattern per layer covers every family.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import rldse

ROOT = Path(rldse.__file__).parent

#: The layers, top first.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("command line", ("rldse.cli", "rldse.cli.**", "rldse.__main__")),
    ("calibration", ("rldse.calibrate", "rldse.calibrate.**")),
    ("external tools", ("rldse.external", "rldse.external.**")),
    ("studies", ("rldse.studies", "rldse.studies.**")),
    ("search", ("rldse.search", "rldse.search.**")),
    ("simulated programs", ("rldse.workloads.*.program*", "rldse.workloads.*.program*.**")),
    ("engine", ("rldse.sim", "rldse.sim.**")),
    ("system", ("rldse.system",)),
    ("recording", ("rldse.integrations", "rldse.integrations.**", "rldse.recording",
                   "rldse.recording.**")),
    ("real training loops", ("rldse.workloads.*.*",)),
    ("shared real-loop pieces", ("rldse.workloads.common", "rldse.workloads.common.**")),
    ("workload registry", ("rldse.workloads", "rldse.workloads.*",
                           "rldse.workloads.*.info")),  # a family's typed workload_info
    ("part models", ("rldse.models", "rldse.models.**")),
    ("trace", ("rldse.trace",)),
    ("host", ("rldse.host",)),
    ("kernels", ("rldse.kernels", "rldse.kernels.**")),
    ("base", ("rldse", "rldse.errors", "rldse.plugins", "rldse.strict", "rldse.yamlfile",
              "rldse.files", "rldse.paths", "rldse.threads", "rldse.cpu_clock")),
)


def layer_of(module: str) -> int:
    """Index in LAYERS of the layer that names ``module`` most precisely."""
    best: tuple[int, int] | None = None  # (literal characters, layer)
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if _compiled(pattern).match(module):
                score = len(pattern.replace("*", ""))
                if best is None or score > best[0]:
                    best = (score, index)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[1]


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    regex = ""
    for i, segment in enumerate(pattern.split(".")):
        if segment == "**":
            regex += r"(?:\.[A-Za-z0-9_]+)*"
            continue
        body = re.escape(segment).replace(r"\*", r"[A-Za-z0-9_]*")
        regex += body if i == 0 else r"\." + body
    return re.compile(regex + "$")


def modules() -> dict[str, Path]:
    """Every module of rldse by dotted name (a package by its ``__init__``)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, known: set[str]) -> dict[str, bool]:
    """The rldse modules ``module`` imports, each with whether the import runs (False:
    only under ``if TYPE_CHECKING:``). ``from a import b`` is module a.b when that exists,
    else a."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, bool] = {}

    def add(name: str, runs: bool) -> None:
        if name in known and name != module:
            out[name] = out.get(name, False) or runs

    def visit(node: ast.AST, runs: bool) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.body:
                visit(child, False)
            for child in node.orelse:
                visit(child, runs)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, runs)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in known else base, runs)
        for child in ast.iter_child_nodes(node):
            visit(child, runs)

    visit(tree, True)
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@cache
def graph() -> dict[str, dict[str, bool]]:
    """module -> {imported module: whether that import runs}."""
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def running(g: dict[str, dict[str, bool]]) -> dict[str, set[str]]:
    """The imports that run (a loop of type-only imports loads nothing twice)."""
    return {m: {t for t, runs in targets.items() if runs} for m, targets in g.items()}


def upward(g: dict[str, dict[str, bool]] | dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                  for a, targets in g.items() for b in targets if layer_of(b) < layer_of(a))


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_module_is_in_a_layer():
    for module in graph():
        layer_of(module)


def test_no_upward_import():
    assert upward(graph()) == []


def test_no_import_cycle():
    assert cycles(running(graph())) == []


def test_the_check_sees_an_upward_import_and_a_loop():
    g = {"rldse.host": {"rldse.sim.machine"}, "rldse.sim.machine": {"rldse.host"}}
    assert upward(g) == ["rldse.host (host) imports rldse.sim.machine (engine)"]
    assert cycles(g) == [["rldse.host", "rldse.sim.machine"]]


def test_registered_real_loops_sit_below_the_engine_and_programs_above():
    """What a family registers, checked against the contract: its capture module (the real
    loop) may not reach the simulator, its program may."""
    from rldse.workloads import WORKLOADS

    names = [name for name, _ in LAYERS]
    engine, programs = names.index("engine"), names.index("simulated programs")
    for workload in WORKLOADS.values():
        assert layer_of(workload.capture_module) > engine, workload.name
        assert layer_of(workload.program_module) <= programs, workload.name


def test_capture_and_recording_load_no_simulator():
    """At run time too (package __init__s included): loading every real loop and the
    recording API loads neither the engine, the system nor SimPy."""
    code = ("import sys; from importlib import import_module; import rldse.recording; "
            "from rldse.workloads import WORKLOADS; "
            "[import_module(w.capture_module) for w in WORKLOADS.values()]; "
            "print(sorted(m for m in sys.modules if m == 'simpy' or "
            "m.startswith(('rldse.sim', 'rldse.system', 'rldse.search'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent)
    assert out.stdout.strip() == "[]"
