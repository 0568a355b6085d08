"""`rldse calibrate cpu`: this host as a CPU preset, from its measured fingerprint.

The preset is the one ``host`` stands for in a trace captured here
(``rldse.models.cpu.host_preset.host_params`` of ``rldse.host.measure()``), so whatever the
fingerprint measures flows into it; numbers the fingerprint measures get a
``measured: rldse calibrate cpu, <cpu>, <date>, method measured`` source, assumptions
keep theirs and their ranges. Two curves are printed (and kept in the file's
provenance) to show what one number per field leaves out: copy bandwidth against size
and GEMM rate against size.
"""

from __future__ import annotations

from pathlib import Path

from rldse.calibrate import Calibration
from rldse.calibrate.preset_file import check_name_free, preset_document, today
from rldse.host import HostFingerprint, copy_gbs, matmul_gflops, measure
from rldse.models import presets
from rldse.models.spec import Param
from rldse.threads import single_blas_thread

#: copy sizes, bytes: L1-resident to DRAM
COPY_BYTES = (4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20)
#: square float32 GEMM sizes, one BLAS thread
GEMM_SIZES = (8, 16, 32, 64, 128, 256, 512)


def copy_curve(sizes=COPY_BYTES, quick: bool = False) -> list[tuple[int, float]]:
    """(bytes, GB/s counting read + write) of a numpy copy, best of a few (timed by
    rldse.host.copy_gbs, the fingerprint's own copy timing)."""
    return [(n, copy_gbs(n, repeats=3 if quick else 5))
            for n in (sizes if not quick else sizes[:-1])]


def gemm_curve(sizes=GEMM_SIZES, quick: bool = False) -> list[tuple[float, float]]:
    """(flops per product 2n³, GFLOP/s) of float32 square numpy matmuls, one BLAS thread
    (timed by rldse.host.matmul_gflops, the fingerprint's own matmul timing), about
    2·10⁷ flops per timed run."""
    with single_blas_thread():
        return [(2.0 * n**3, matmul_gflops(n, inner=max(1, int(2e7 // (2 * n**3))),
                                           repeats=3 if quick else 5))
                for n in (sizes if not quick else sizes[:-1])]


def _is_measured(p: Param) -> bool:
    text = p.source.lower()
    return (p.range is None and text.startswith(("fingerprint:", "measured"))
            and "assum" not in text)


def calibrate_cpu(name: str, out_dir: str | Path, quick: bool = False,
                  fingerprint: HostFingerprint | None = None) -> Calibration:
    """Measure this host and build cpu preset ``name`` for ``out_dir`` (``fingerprint``:
    use this one instead of measuring, for tests)."""
    check_name_free(name, out_dir)
    fp = fingerprint or measure()
    date = today()
    stamp = f"measured: rldse calibrate cpu, {fp.cpu_model}, {date}, method measured"
    host = presets.get_preset("cpu", presets.HOST, host=fp)
    params = {f: Param(p.value, p.unit, f"{stamp} ({p.source})") if _is_measured(p) else p
              for f, p in host.params.items()}
    copies = copy_curve(quick=quick)
    gemms = gemm_curve(quick=quick)  # square sizes; the fingerprint's own curve is in it
    from rldse import __version__

    provenance = {
        "tool": "rldse calibrate cpu", "rldse": __version__, "date": date,
        "method": "measured", "cpu_model": fp.cpu_model,
        "fingerprint": fp.model_dump(mode="json"),
        "copy_curve_bytes_gbs": [list(r) for r in copies],
        "gemm_curve_flops_gflops": [list(r) for r in gemms],
        "measured_fields": sorted(f for f, p in params.items() if p.source.startswith(stamp)),
    }
    doc = preset_document("cpu", name, f"{fp.cpu_model} (this host), calibrated {date}",
                          params, provenance)
    report = [f"cpu preset '{name}': {fp.cpu_model}, {fp.cores} logical CPUs @ "
              f"{fp.clock_mhz:.0f} MHz",
              f"  measured fields: {', '.join(provenance['measured_fields'])}",
              f"  kept assumptions (with ranges): "
              f"{', '.join(sorted(f for f, p in params.items() if p.range is not None))}",
              "  copy bandwidth (numpy copy, read + write):",
              *[f"    {_bytes(n):>8}  {gbs:8.2f} GB/s" for n, gbs in copies],
              "  GEMM rate (float32, one BLAS thread):",
              *[f"    {f:12.4g} flop  {g:8.2f} GFLOP/s" for f, g in gemms]]
    return Calibration("cpu", name, doc, report)


def _bytes(n: float) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"
