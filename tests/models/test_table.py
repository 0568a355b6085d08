"""Table-driven parts from PEARL-format CSV files (tiny copies of PT.csv and BW.csv rows)."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import OpColumns, TableModel, load_link_table, load_table_part, make_model

PT = """,RP-update,RP-insert,RP-sample,LN,RPLN-RP-update,RPLN-RP-insert,RPLN-RP-sample,RPLN-LN
CPU,0.002,0.0013,0.03,0.6,0.002,0.0001,0.3,0.6
GPU1,0.001,0.0006,0.5,0.2,0.002,0.0006,0.6,0.6
"""
BW = """"device 1, device 2",latency-ms,bandwidth-GBpms
"CPU,CPU",0.002,0.032
"CPU,GPU1",1,0.016
"""


@pytest.fixture
def pt(tmp_path):
    path = tmp_path / "PT.csv"
    path.write_text(PT)
    return path


def test_latencies_by_phase_in_seconds(pt):
    spec = load_table_part(pt, "GPU1")
    assert spec.name == "GPU1"
    assert spec.latency_s == pytest.approx({"replay_update": 1e-6, "replay_add": 0.6e-6,
                                            "replay_sample": 0.5e-3, "learn": 0.2e-3})
    assert spec.colocated_latency_s["learn"] == pytest.approx(0.6e-3)


def test_op_seconds_look_up_the_phase(pt):
    model = make_model(load_table_part(pt, "CPU"))
    assert isinstance(model, TableModel)
    ops = OpColumns.of(["learn", "replay_sample", "replay_add"], items=[64, 64, 1])
    np.testing.assert_allclose(model.op_seconds(ops), [0.6e-3, 0.03e-3, 0.0013e-3])
    np.testing.assert_allclose(model.op_seconds(ops, colocated=True), [0.6e-3, 0.3e-3, 0.1e-6])
    with pytest.raises(RldseError, match="no latency for phase 'env_step'"):
        model.op_seconds(OpColumns.of("env_step"))


def test_units_and_power(pt):
    spec = load_table_part(pt, "CPU", unit="us", max_w=100, idle_w=40)
    assert spec.latency_s["learn"] == pytest.approx(0.6e-6)
    e = TableModel(spec).energy(busy_s=1.0, wall_s=2.0)
    assert float(e.joules) == pytest.approx(40 * 2 + 60 * 1)


def test_bad_tables_fail_in_one_line(tmp_path, pt):
    with pytest.raises(RldseError, match="no row whose first cell is 'FPGA' \\(the table has 2 "):
        load_table_part(pt, "FPGA")
    with pytest.raises(RldseError, match="unit 'minutes' is unknown"):
        load_table_part(pt, "CPU", unit="minutes")
    bad = tmp_path / "bad.csv"
    bad.write_text(",LN,warp\nCPU,1,2\n")
    with pytest.raises(RldseError, match="line 1, column 3: expected an rldse phase"):
        load_table_part(bad, "CPU")
    bad.write_text(",LN\n\nCPU,fast\n")  # a blank line still counts
    with pytest.raises(RldseError, match="line 3, column 2: expected a number from 0 to"):
        load_table_part(bad, "CPU")
    bad.write_text(",LN\nCPU,-1\n")
    with pytest.raises(RldseError, match="line 2, column 2: expected a number from 0 to"):
        load_table_part(bad, "CPU")
    bad.write_bytes(b",LN\nCPU,\xff\n")
    with pytest.raises(RldseError, match="byte 8: expected UTF-8"):
        load_table_part(bad, "CPU")
    bad.write_text(',LN\nCPU,"1\n')
    with pytest.raises(RldseError, match="line 2: expected CSV"):
        load_table_part(bad, "CPU")
    bad.write_text(",LN\n" + "CPU,1\n" * 200_000)
    with pytest.raises(RldseError, match="bytes: expected a latency table"):
        load_table_part(bad, "CPU")
    with pytest.raises(RldseError, match="no such file"):
        load_table_part(tmp_path / "missing.csv", "CPU")


#: A file a spec should never read, as the host's password file looks.
SHADOW = ("root:$6$Zq8xSecretSalt$hashhashhash:19500:0:99999:7:::\n"
          "daemon:*:19500:0:99999:7:::\nalice:$y$j9T$AnotherSecret:19600:0:99999:7:::\n")


@pytest.mark.parametrize("device", ["root", "replay", "daemon:*:19500:0:99999:7:::"])
def test_errors_never_quote_the_file(tmp_path, device):
    """Pointed at a file that is not a table, the error names lines and columns only."""
    path = tmp_path / "shadow"
    path.write_text(SHADOW)
    with pytest.raises(RldseError) as err:
        load_table_part(path, device)
    with pytest.raises(RldseError) as link_err:
        load_link_table(path)
    for message in (str(err.value), str(link_err.value)):
        shown = message.replace(str(path), "").replace(device, "")
        for cell in {c for line in SHADOW.splitlines() for c in line.split(":") if c}:
            assert cell not in shown, (cell, message)


def test_link_table(tmp_path):
    path = tmp_path / "BW.csv"
    path.write_text(BW)
    links = load_link_table(path)
    cpu_gpu = links.get("GPU1", "CPU")
    assert cpu_gpu.latency_s == pytest.approx(1e-3)
    assert cpu_gpu.bandwidth_gbs == pytest.approx(16.0)  # 0.016 GB per ms
    assert links.get("CPU", "CPU").bandwidth_gbs == pytest.approx(32.0)
    with pytest.raises(RldseError, match="no link between 'GPU1' and 'FPGA'"):
        links.get("GPU1", "FPGA")
    path.write_text('"a, b",latency-fortnights,bandwidth-GBps\n"CPU,CPU",1,1\n')
    with pytest.raises(RldseError, match="line 1, column 2: expected the column name latency-"):
        load_link_table(path)
    path.write_text('"a, b",latency-ms,bandwidth-GBps\n"CPU,CPU",1,0\n')
    with pytest.raises(RldseError, match="line 2, column 3: expected a number from 0.001 to"):
        load_link_table(path)
