"""PEARL's data-storage traffic model (SysCon.py), checked against its closed form by hand:
Σ over learner, actor and replay manager of hops × (latency + GB / bandwidth), a path
between two accelerators being two hops through the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.models.table import load_link_table
from rldse.paths import FOLDER
from rldse.studies.pearl_mapping.params import PearlTables, Published
from rldse.studies.pearl_mapping.storage import place_storage, storage_traffic_ms

TABLES = PearlTables.model_validate(
    {"latency_csv": "PT.csv", "link_csv": "BW.csv", "train_batch_size": 512,
     "insert_batch_size": 256, "state_size": 4, "action_size": 2,
     "published": Published(rm="CPU", learner="GPU", data_storage="CPU",
                            peak_samples_per_s=1.0)},
    context={FOLDER: Path(__file__).parent})
LEARNER_GB = 512 * (4 * 2 + 2 + 3) * 4 / 1e9  # a training batch: s, s', a, r, done, index
ACTOR_GB = 256 * (4 * 2 + 2 + 2) * 4 / 1e9  # an insert batch


@pytest.fixture
def links(tmp_path):
    # no GPU-FPGA row: a direct lookup between the two accelerators would fail
    csv = tmp_path / "BW.csv"
    csv.write_text('"device 1, device 2",latency-ms,bandwidth-GBpms\n'
                   '"CPU,CPU",0.002,0.032\n"CPU,GPU",1,0.016\n"CPU,FPGA",1,0.016\n'
                   '"GPU,GPU",0.001,0.5\n"FPGA,FPGA",0.001,0.5\n')
    return load_link_table(csv)


def test_accelerator_store_goes_through_the_cpu(links):
    rm_gb = 3e-6
    got = storage_traffic_ms(TABLES, links, "FPGA", "GPU", "CPU", "CPU", rm_gb=rm_gb)
    # learner on the GPU: FPGA→CPU→GPU, two 1 ms hops; actor and RM on the CPU: one each
    want = 2 * (1 + LEARNER_GB / 0.016) + (1 + ACTOR_GB / 0.016) + (1 + rm_gb / 0.016)
    assert got == pytest.approx(want, rel=1e-12)


def test_cpu_store_is_one_hop_to_each(links):
    got = storage_traffic_ms(TABLES, links, "CPU", "GPU", "CPU", "CPU", rm_gb=0.0)
    want = (1 + LEARNER_GB / 0.016) + (0.002 + ACTOR_GB / 0.032) + 0.002
    assert got == pytest.approx(want, rel=1e-12)


def test_placement_takes_the_least_traffic(links):
    storage = place_storage(TABLES, links, ["CPU", "GPU", "FPGA"], rm="CPU", learner="GPU")
    assert list(storage.traffic_ms) == ["CPU", "GPU", "FPGA"]
    assert storage.store == min(storage.traffic_ms, key=storage.traffic_ms.get) == "CPU"
    # SysCon.py counts the RM's traffic as train_batch_size GB; as indices it is tiny
    assert storage.traffic_ms["FPGA"] > storage.traffic_indices_ms["FPGA"]
    assert storage.store_indices in storage.traffic_indices_ms
