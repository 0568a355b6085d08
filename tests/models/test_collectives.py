"""Collectives: closed forms against hand-computed α–β values, the event reference
against the closed form, NCCL's choice by size, and one-line errors."""

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import load_part
from rldse.models.collectives import (
    BUS_FACTOR,
    Cluster,
    available,
    bus_gbs,
    choose,
    collective_seconds,
    event_seconds,
)

A100 = load_part("fabric", "dgx-a100")
H100 = load_part("fabric", "dgx-h100")
HDR = load_part("network", "ib-hdr")


def test_bus_factors_are_nccl_tests_definitions():
    assert BUS_FACTOR["all_reduce"](8) == pytest.approx(1.75)
    assert BUS_FACTOR["all_gather"](8) == pytest.approx(0.875)
    assert BUS_FACTOR["reduce_scatter"](4) == pytest.approx(0.75)
    assert BUS_FACTOR["broadcast"](8) == BUS_FACTOR["send_recv"](2) == 1.0


def test_ring_all_reduce_is_alpha_beta_by_hand():
    # 8 A100: 2·7 steps of (3.4 µs + S/8 over 12 × 25 GB/s × 0.822), after 8.4 µs
    size = 2.0**30
    expected = 8.4e-6 + 14 * (3.4e-6 + size / 8 / (300e9 * 0.822))
    got = collective_seconds(Cluster(A100), "all_reduce", size, "ring", "Simple")
    assert got == pytest.approx(expected, rel=1e-12)


def test_large_ring_bus_bandwidth_reaches_the_link_share():
    sizes = np.array([2.0**33])
    t = collective_seconds(Cluster(A100), "all_gather", sizes, "ring", "Simple")
    assert bus_gbs("all_gather", 8, sizes, t)[0] == pytest.approx(300 * 0.822, rel=2e-3)


def test_across_nodes_the_nics_bound_the_ring():
    two = Cluster(A100, nodes=2, network=HDR)
    t = collective_seconds(two, "all_reduce", 2.0**34, "ring", "Simple")
    assert bus_gbs("all_reduce", 16, 2.0**34, t) == pytest.approx(8 * 25 * 0.96, rel=1e-2)


def test_nvls_only_on_one_node_whose_switch_reduces():
    assert ("nvls", "Simple") in available(Cluster(H100), "all_reduce")
    assert not any(a == "nvls" for a, _ in available(Cluster(A100), "all_reduce"))
    ndr = load_part("network", "ib-ndr")
    assert not any(a == "nvls" for a, _ in available(Cluster(H100, nodes=2, network=ndr),
                                                     "all_reduce"))


def test_choice_is_the_fastest_and_moves_from_ll_to_simple_with_size():
    sizes = np.logspace(3, 10, 15)
    pick = choose(Cluster(A100), "all_reduce", sizes)
    for i, size in enumerate(sizes):
        every = [collective_seconds(Cluster(A100), "all_reduce", size, a, p)
                 for a, p in available(Cluster(A100), "all_reduce")]
        assert pick.seconds[i] == pytest.approx(min(every))
    assert pick.protocol[0] == "LL" and pick.protocol[-1] == "Simple"
    assert choose(Cluster(H100), "all_reduce", 2.0**32).algorithm == "nvls"


@pytest.mark.parametrize("cluster", [Cluster(A100), Cluster(A100, nodes=2, network=HDR),
                                     Cluster(A100, nodes=3, gpus_per_node=2, network=HDR)],
                         ids=["1x8", "2x8", "3x2"])
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter",
                                        "send_recv"])
@pytest.mark.parametrize("protocol", ["LL", "Simple"])
def test_event_run_matches_the_closed_form_where_nothing_contends(cluster, collective,
                                                                  protocol):
    algorithm = "direct" if collective == "send_recv" else "ring"
    for size in (1e3, 4e6, 3e8):
        closed = float(collective_seconds(cluster, collective, size, algorithm, protocol))
        assert event_seconds(cluster, collective, size, protocol) == pytest.approx(
            closed, rel=1e-9)


def test_sharing_links_shares_their_bandwidth():
    """Two all-reduces at once: the event run takes twice the bytes' time per step, its
    hop latencies hidden behind the other's bytes: between the closed form with half the
    bandwidth and that less one hop latency per step."""
    two = Cluster(A100, nodes=2, network=HDR)
    size = 2.56e8
    alone = float(collective_seconds(two, "all_reduce", size, "ring", "Simple"))
    shared = float(collective_seconds(two, "all_reduce", size, "ring", "Simple", shared_by=2))
    both = event_seconds(two, "all_reduce", size, "Simple", concurrent=2)
    assert 1.8 * alone < shared and shared - 30 * 14e-6 <= both <= shared * (1 + 1e-9)


def test_bad_inputs_are_one_line():
    with pytest.raises(RldseError, match="need a network"):
        Cluster(A100, nodes=2)
    with pytest.raises(RldseError, match="gpus_per_node"):
        Cluster(A100, gpus_per_node=9)
    with pytest.raises(RldseError, match="unknown 'allreduce'"):
        choose(Cluster(A100), "allreduce", 1e6)
    with pytest.raises(RldseError, match="cannot run"):
        collective_seconds(Cluster(A100), "all_reduce", 1e6, "nvls", "Simple")


@pytest.mark.parametrize("cluster", [Cluster(A100), Cluster(A100, nodes=2, network=HDR),
                                     Cluster(A100, nodes=4, gpus_per_node=2, network=HDR),
                                     Cluster(A100, nodes=5, network=HDR),
                                     Cluster(A100, nodes=8, gpus_per_node=1, network=HDR)],
                         ids=["1x8", "2x8", "4x2", "5x8", "8x1"])
@pytest.mark.parametrize("protocol", ["LL", "LL128", "Simple"])
def test_tree_event_run_matches_the_closed_form(cluster, protocol):
    """Reduced up a chain per node and a heap binary tree of nodes (5 nodes: depth 2, the
    ⌊log2 5⌋ of NCCL's tuner), then broadcast down."""
    for size in (1e3, 4e6, 3e8):
        closed = float(collective_seconds(cluster, "all_reduce", size, "tree", protocol))
        assert event_seconds(cluster, "all_reduce", size, protocol, algorithm="tree") == \
            pytest.approx(closed, rel=1e-9)


def test_tree_latency_is_two_passes_of_the_deepest_path_by_hand():
    five = Cluster(A100, nodes=5, network=HDR)  # 7 NVLink hops, then 2 levels of nodes
    expected = 8.4e-6 + 2 * (7 * 4.0e-6 + 2 * 14e-6) + 2 * 1e3 / (8 * 25e9 * 0.96)
    assert float(collective_seconds(five, "all_reduce", 1e3, "tree", "Simple")) == \
        pytest.approx(expected, rel=1e-12)


def test_nvls_event_run_matches_the_closed_form_and_shares_the_switch_links():
    for size in (1e3, 4e6, 3e8):
        closed = float(collective_seconds(Cluster(H100), "all_reduce", size, "nvls", "Simple"))
        assert event_seconds(Cluster(H100), "all_reduce", size, algorithm="nvls") == \
            pytest.approx(closed, rel=1e-9)
        shared = float(collective_seconds(Cluster(H100), "all_reduce", size, "nvls", "Simple",
                                          shared_by=2))
        assert event_seconds(Cluster(H100), "all_reduce", size, algorithm="nvls",
                             concurrent=2) == pytest.approx(shared, rel=1e-9)


def test_broadcast_chain_by_hand_and_against_the_event_run():
    # 8 A100 in one node: 7 NVLink hops of 3.4 µs, then the buffer at one GPU's share
    size = 2.0**28
    expected = 8.4e-6 + 7 * 3.4e-6 + size / (300e9 * 0.822)
    one = Cluster(A100)
    assert float(collective_seconds(one, "broadcast", size, "chain", "Simple")) == \
        pytest.approx(expected, rel=1e-12)
    by_node = Cluster(A100, nodes=4, gpus_per_node=1, network=HDR)  # every hop alike
    for cluster in (one, by_node):
        for protocol in ("LL", "Simple"):
            closed = float(collective_seconds(cluster, "broadcast", size, "chain", protocol))
            assert event_seconds(cluster, "broadcast", size, protocol) == pytest.approx(
                closed, rel=1e-9)
    # several nodes of several GPUs: the tuner charges all 15 steps the network's hop, the
    # event run the 14 NVLink hops their own: (n - N)(hop_net - hop_intra) apart
    two = Cluster(A100, nodes=2, network=HDR)
    closed = float(collective_seconds(two, "broadcast", size, "chain", "Simple"))
    assert closed - event_seconds(two, "broadcast", size) == pytest.approx(
        14 * (14e-6 - 3.4e-6), rel=1e-9)


def test_event_run_refuses_what_it_does_not_run():
    with pytest.raises(RldseError, match="event reference"):
        event_seconds(Cluster(A100), "all_to_all", 1e6)
    with pytest.raises(RldseError, match="cannot run"):
        event_seconds(Cluster(A100), "all_reduce", 1e6, algorithm="nvls")
