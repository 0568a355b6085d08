"""Data set "verl": the rows' systems, the documented command; the whole
table (about 15 s) is the slow test."""

from pathlib import Path

import pytest

from rldse import simulate
from rldse.external import verl
from rldse.system import load_spec
from rldse.workloads import open_trace

ROOT = Path(__file__).resolve().parents[2]


def test_documented_command_predicts_what_the_validation_predicts():
    row = next(r for r in verl.table().itertuples()
               if r.mode == "colocate sync" and r.gpus == 64)
    sets = {"workload.model": "qwen2.5-math-7b",
            "workload.prompts_per_step": 512, "workload.responses_per_prompt": 16,
            "workload.train_batch": 32, "workload.response_tokens.mean": 2990,
            "placement.protocol": "colocated", "workload.offload": True}
    spec = load_spec(ROOT / "examples" / "verl_h20.yaml", sets)
    trace = open_trace(ROOT / "traces" / "llm_rl_grpo.parquet")
    documented = simulate(trace, spec).breakdown_s["step_s"]
    assert documented == pytest.approx(verl.predict_step_s(row, 2990), rel=1e-9)


@pytest.mark.slow
def test_every_row_is_predicted_with_one_inferred_length():
    mean, rows = verl.predictions()
    assert 50 < mean < 20_000
    anchor = rows[rows["colocated"] & (rows["gpus"] == 32)].iloc[0]
    assert anchor.predicted_s == pytest.approx(anchor.step_s, rel=1e-3)
    assert len(rows) == 9 and (rows["predicted_s"] > 0).all()
