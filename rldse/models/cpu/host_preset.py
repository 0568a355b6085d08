"""The ``host`` preset: a CPU spec's numbers from a trace's host fingerprint (the measured
rates as the host's own roofline, so replays on it scale by 1), and the stated
assumptions for what a fingerprint does not measure (power, price, memory, a clock).

The same split of a package's TDP and list price gives a CPU preset's power and price
fields from its datasheet (``datasheet_split``: a preset may write ``tdp_w`` and
``list_price_usd`` instead of the five fields)."""

from __future__ import annotations

from rldse.host import HostFingerprint
from rldse.models.spec import Param

#: Stated assumptions for what a fingerprint does not measure (power, price, an unknown clock).
#: Across the CPU presets, TDP per hardware thread is 1.8-5.8 W and list price 26-54 USD.
HOST_W_PER_CPU = Param(5.0, "W", "assumption: presets' TDP per hardware thread is 1.8-5.8 W",
                       (2.0, 12.0))
HOST_IDLE_SHARE = Param(0.5, "fraction", "servers idle near half of peak power (Barroso and "
                        "Hölzle 2007, UNVERIFIED)", (0.2, 0.6))
HOST_USD_PER_CPU = Param(40.0, "USD", "assumption: presets' list price per hardware thread is "
                         "26-54 USD", (20.0, 100.0))
#: Where a trace's fingerprint predates the GEMM curve (said in the host preset and the Result).
NO_GEMM_CURVE = ("fingerprint has no GEMM curve (captured before it): every GEMM size runs at "
                 "the one 128³ matmul rate, which overstates thin layers' speed")
HOST_CLOCK_MHZ = Param(2500.0, "MHz", "assumption: the fingerprint has no clock (clock_mhz 0); "
                       "replays on 'host' are exact, scaling to other CPUs is not", (1000.0, 5000.0))
#: The presets' split of TDP and price (presets/cpu.yaml gives each preset's numbers from it).
HOST_UNCORE_SHARE = Param(0.3, "fraction", "assumption: the uncore draws 20-45 % of a server "
                          "package's TDP at full load (UNVERIFIED)", (0.2, 0.45))
HOST_BASE_SHARE = Param(0.15, "fraction", "assumption: 15 % of a processor's list price is "
                        "per socket, the rest per core", (0.0, 0.4))
HOST_MEM_PER_CPU = Param(4 * 2**30, "B", "assumption: the fingerprint has no memory size; "
                         "4 GiB per logical CPU", (2**30, 16 * 2**30))


#: What a CPU preset may write instead of the five split fields (datasheet_split).
DATASHEET_FIELDS = {"tdp_w": "W", "list_price_usd": "USD"}
#: The five fields the split gives: TDP's three, price's two.
TDP_FIELDS = ("uncore_w", "core_active_w", "core_idle_w")
PRICE_FIELDS = ("socket_base_usd", "core_usd")


def datasheet_split(cores: int, tdp: Param | None, price: Param | None) -> dict[str, Param]:
    """The power and price fields of a CPU with ``cores`` cores per socket from its TDP
    (W per socket) and list price (USD per socket), each with its range, the rule the
    packaged presets state (presets/cpu.yaml):

    - uncore_w = u × TDP (u = HOST_UNCORE_SHARE, 0.3; 0.2-0.45), busy or idle;
    - core_active_w = (1 − u) × TDP / cores, so every core busy draws the TDP;
    - core_idle_w = (i − u) × TDP / cores (i = HOST_IDLE_SHARE, 0.5): the idle socket draws
      half its TDP; range 0 to 0.3 × TDP / cores;
    - socket_base_usd = b × price (b = HOST_BASE_SHARE, 0.15; 0-0.4), core_usd =
      (1 − b) × price / cores (range 0.6-1.0 × price / cores), so the SKU costs its price.
    """
    out: dict[str, Param] = {}
    if tdp is not None:
        t, src = float(tdp.value), f"TDP {tdp.value:g} W: {tdp.source}"
        u, (u_lo, u_hi), idle = (HOST_UNCORE_SHARE.value, HOST_UNCORE_SHARE.range,
                                 HOST_IDLE_SHARE.value)
        out["uncore_w"] = Param(u * t, "W", f"{u:g} × TDP ({HOST_UNCORE_SHARE.source}); "
                                f"{src}", (u_lo * t, u_hi * t))
        out["core_active_w"] = Param((1 - u) * t / cores, "W", f"(1 − {u:g}) × TDP / {cores} "
                                     f"cores: every core busy and the uncore give the TDP; "
                                     f"{src}", ((1 - u_hi) * t / cores, (1 - u_lo) * t / cores))
        out["core_idle_w"] = Param((idle - u) * t / cores, "W", f"({idle:g} − {u:g}) × TDP / "
                                   f"{cores} cores: with the uncore, the idle socket draws "
                                   f"{idle:g} × TDP ({HOST_IDLE_SHARE.source}); {src}",
                                   (0.0, 0.3 * t / cores))
    if price is not None:
        usd, src = float(price.value), f"list price {price.value:g} USD: {price.source}"
        b, (b_lo, b_hi) = HOST_BASE_SHARE.value, HOST_BASE_SHARE.range
        out["socket_base_usd"] = Param(b * usd, "USD", f"{b:g} × list price "
                                       f"({HOST_BASE_SHARE.source}); {src}", (b_lo * usd,
                                                                               b_hi * usd))
        out["core_usd"] = Param((1 - b) * usd / cores, "USD", f"(1 − {b:g}) × list price / "
                                f"{cores} cores; {src}", (0.6 * usd / cores, usd / cores))
    return out


def _host_provisioning(fp: HostFingerprint) -> dict[str, Param]:
    """The host's power, price, threads and memory (rldse.models.cpu, "Provisioned"): the
    presets' split of a TDP (HOST_W_PER_CPU per logical CPU) and of a list price
    (HOST_USD_PER_CPU), the measured memory and shared-core slowdown where the fingerprint
    has them (else cpu.yaml's stated defaults fill shared_core_slowdown)."""
    n = fp.cores
    w, usd, unc, idle = (HOST_W_PER_CPU.value, HOST_USD_PER_CPU.value, HOST_UNCORE_SHARE.value,
                         HOST_IDLE_SHARE.value)
    tdp = w * n
    base = HOST_BASE_SHARE.value
    out = {
        "threads_per_core": Param(1, "count", "fingerprint: cores counts logical CPUs, SMT "
                                  "siblings included, so each runs one process"),
        "uncore_w": Param(unc * tdp, "W", f"{unc:g} × an assumed TDP of {w:g} W per logical "
                          f"CPU × {n} ({HOST_UNCORE_SHARE.source}; {HOST_W_PER_CPU.source})",
                          (HOST_UNCORE_SHARE.range[0] * HOST_W_PER_CPU.range[0] * n,
                           HOST_UNCORE_SHARE.range[1] * HOST_W_PER_CPU.range[1] * n)),
        "core_active_w": Param((1 - unc) * w, "W", f"(1 − {unc:g}) × {w:g} W per logical CPU: "
                               f"all {n} busy give the assumed TDP ({HOST_W_PER_CPU.source})",
                               ((1 - HOST_UNCORE_SHARE.range[1]) * HOST_W_PER_CPU.range[0],
                                (1 - HOST_UNCORE_SHARE.range[0]) * HOST_W_PER_CPU.range[1])),
        "core_idle_w": Param((idle - unc) * w, "W", f"({idle:g} − {unc:g}) × {w:g} W per "
                             f"logical CPU: idle at {idle:g} × TDP ({HOST_IDLE_SHARE.source})",
                             (0.0, 0.3 * HOST_W_PER_CPU.range[1])),
        "socket_base_usd": Param(base * usd * n, "USD", f"{base:g} × an assumed {usd:g} USD "
                                 f"per logical CPU × {n} ({HOST_BASE_SHARE.source}; "
                                 f"{HOST_USD_PER_CPU.source})",
                                 (0.0, HOST_BASE_SHARE.range[1] * HOST_USD_PER_CPU.range[1] * n)),
        "core_usd": Param((1 - base) * usd, "USD", f"(1 − {base:g}) × {usd:g} USD per logical "
                          f"CPU ({HOST_USD_PER_CPU.source})",
                          ((1 - HOST_BASE_SHARE.range[1]) * HOST_USD_PER_CPU.range[0],
                           HOST_USD_PER_CPU.range[1])),
    }
    if fp.mem_bytes is not None:
        out["mem_bytes"] = Param(int(fp.mem_bytes), "B", "fingerprint: physical memory")
    else:
        out["mem_bytes"] = Param(HOST_MEM_PER_CPU.value * n, "B", f"{HOST_MEM_PER_CPU.source} "
                                 f"× {n}", (HOST_MEM_PER_CPU.range[0] * n,
                                            HOST_MEM_PER_CPU.range[1] * n))
    if fp.shared_core_slowdown is not None:
        out["shared_core_slowdown"] = Param(
            max(1.0, fp.shared_core_slowdown), "x", "fingerprint: measured two processes on "
            f"one core, {fp.shared_core_slowdown:.3g} (floored at 1: a ratio below 1 is noise)")
    return out


def host_params(fp: HostFingerprint) -> dict[str, Param]:
    """The numbers of the ``host`` preset, from a trace's host fingerprint.

    The measured rates become the host's per-core roofline exactly (efficiencies of 1,
    one socket, random-access time as latency with parallelism 1), so replaying a trace on
    ``host`` gives scale factors of 1. Assumes the fingerprint's matmul ran on one core.
    """
    if fp.clock_mhz > 0:
        clock = Param(fp.clock_mhz, "MHz", "fingerprint: cpufreq max or /proc/cpuinfo clock")
    else:
        clock = HOST_CLOCK_MHZ
    n = fp.cores
    return {
        "cores": Param(n, "count", f"fingerprint: logical CPUs of '{fp.cpu_model}'"),
        "sockets": Param(1, "count", "fingerprint records no sockets: one assumed"),
        "clock_mhz": clock,
        "flops_per_cycle": Param(fp.matmul_gflops * 1e3 / clock.value, "flop/cycle",
                                 f"fingerprint: measured matmul {fp.matmul_gflops:.3g} GFLOP/s "
                                 "/ clock"),
        "blas_efficiency": Param(1.0, "fraction", "fingerprint: the matmul rate is measured, "
                                 "so it already is the achieved rate"),
        "mem_bw_gbs": Param(fp.copy_gbs * n, "GB/s", f"fingerprint: measured copy "
                            f"{fp.copy_gbs:.3g} GB/s × cores, so one core's share is the "
                            "measurement"),
        "dram_efficiency": Param(1.0, "fraction", "fingerprint: copy rate is measured"),
        "mem_latency_ns": Param(fp.random_access_ns, "ns", "fingerprint: measured random "
                                "gather, ns per element (overlapped misses)"),
        "mem_parallelism": Param(1.0, "count", "fingerprint: the measured gather already "
                                 "includes overlap"),
        "ipc_factor": Param(1.0, "x", "the host is the reference other CPUs are scaled from"),
        **_host_kernels(fp, clock.value),
        **_host_provisioning(fp),
    }


def _host_kernels(fp: HostFingerprint, clock_mhz: float) -> dict[str, Param]:
    """GEMM curve, element-wise rate and caches of the ``host`` preset; where a trace's
    fingerprint predates them, the fallback is named in each number's source."""
    out = {"numpy_call_ns": Param(fp.numpy_call_ns, "ns", "fingerprint: np.add on 8 floats")}
    if fp.scatter_add_ns:
        out["scatter_add_ns"] = Param(fp.scatter_add_ns, "ns", "fingerprint: np.add.at")
    if fp.sum_tree_level_ns:
        out["sum_tree_level"] = Param(tuple(fp.sum_tree_level_ns), "ns, ns/item",
                                      "fingerprint: SumTree.find, 2^10 vs 2^16 leaves")
    if fp.gemm_curve:
        out["gemm_curve"] = Param(tuple(map(tuple, fp.gemm_curve)), "GFLOP/s",
                                  "fingerprint: float32 matmul of MLP layer products on a "
                                  "batch × inputs × outputs grid, one thread")
    else:
        out["gemm_curve"] = Param(None, "GFLOP/s", NO_GEMM_CURVE)
    for field, gbs, what in (("elementwise_bytes_per_cycle", fp.elementwise_gbs,
                              "element-wise (MLP kernel mix)"),
                             ("vector_bytes_per_cycle", fp.vector_gbs, "Adam kernels")):
        if gbs:
            out[field] = Param(gbs * 1e3 / clock_mhz, "B/cycle",
                               f"fingerprint: measured {what} {gbs:.3g} GB/s / clock")
        else:
            out[field] = Param(fp.copy_gbs * 1e3 / clock_mhz, "B/cycle", "fingerprint "
                               f"predates the {what} rate: its copy rate {fp.copy_gbs:.3g} "
                               "GB/s / clock stands in")
    caches = fp.cache_bytes or {}
    gather = dict(fp.gather_ns or [])
    for field, key in (("l1", "L1d"), ("l2", "L2"), ("llc", "L3")):
        size = caches.get(key)
        if size and size / 2 in gather:
            out[f"{field}_kib"] = Param(size / 1024, "KiB", f"fingerprint: sysfs {key} size")
            out[f"{field}_ns"] = Param(gather[size / 2], "ns", "fingerprint: random gather "
                                       f"within half of {key}, ns per element")
    return out
