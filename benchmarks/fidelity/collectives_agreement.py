"""Collectives: the closed forms (rldse.models.collectives) against the per-message SimPy
reference, and how fast each is.

    python benchmarks/fidelity/collectives_agreement.py

Prints, per cluster and collective (ring collectives, send/receive, the all-reduce tree and
NVLS, the broadcast chain), the largest relative difference of the event run from the
closed form over sizes 1 kB-1 GB and protocols LL/Simple (NVLS: Simple; nothing
contends), and the time of one vectorised closed-form choice over 10,000 sizes against one
event run. The chain on several nodes of several GPUs differs by design (the closed form
charges every step the network's hop, as NCCL's tuner does: rldse.models.collectives).
"""

from __future__ import annotations

import time

import numpy as np

from rldse.models import load_part
from rldse.models.collectives import (
    Cluster,
    available,
    choose,
    collective_seconds,
    event_seconds,
)

SIZES = (1e3, 1e5, 1e7, 1e9)


def main() -> None:
    a100, hdr = load_part("fabric", "dgx-a100"), load_part("network", "ib-hdr")
    clusters = {"1x8 A100": Cluster(a100), "2x8 A100 HDR": Cluster(a100, nodes=2, network=hdr),
                "8x8 A100 HDR": Cluster(a100, nodes=8, network=hdr),
                "8x1 A100 HDR": Cluster(a100, nodes=8, gpus_per_node=1, network=hdr),
                "1x8 H100": Cluster(load_part("fabric", "dgx-h100"))}
    runs = [("all_reduce", "ring"), ("all_gather", "ring"), ("reduce_scatter", "ring"),
            ("send_recv", "direct"), ("all_reduce", "tree"), ("broadcast", "chain"),
            ("all_reduce", "nvls")]
    print("cluster        collective/algorithm  max |event/closed - 1|   event run s   "
          "closed form s")
    for name, cluster in clusters.items():
        for collective, algorithm in runs:
            if (algorithm, "Simple") not in available(cluster, collective):
                continue
            worst, event_s, closed_s = 0.0, 0.0, 0.0
            for protocol in ("Simple",) if algorithm == "nvls" else ("LL", "Simple"):
                for size in SIZES:
                    t0 = time.perf_counter()
                    ev = event_seconds(cluster, collective, size, protocol,
                                       algorithm=algorithm)
                    t1 = time.perf_counter()
                    cf = float(collective_seconds(cluster, collective, size, algorithm,
                                                  protocol))
                    t2 = time.perf_counter()
                    worst, event_s, closed_s = max(worst, abs(ev / cf - 1)), event_s + t1 - t0, \
                        closed_s + t2 - t1
            print(f"{name:14s} {collective + '/' + algorithm:21s} {worst:22.2e} "
                  f"{event_s:13.4f} {closed_s:15.6f}")
    sizes = np.logspace(3, 10, 10_000)
    t0 = time.perf_counter()
    choose(clusters["8x8 A100 HDR"], "all_reduce", sizes)
    vec_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    event_seconds(clusters["8x8 A100 HDR"], "all_reduce", 1e9)
    one_event_s = time.perf_counter() - t0
    print(f"choose() over 10,000 sizes on 8x8: {vec_s * 1e3:.1f} ms "
          f"({vec_s / 1e4 * 1e6:.2f} us per size, every algorithm and protocol); "
          f"one event run of a 64-rank ring all-reduce: {one_event_s * 1e3:.1f} ms "
          f"(ratio {one_event_s / (vec_s / 1e4):,.0f}x)")


if __name__ == "__main__":
    main()
