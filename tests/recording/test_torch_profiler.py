"""`rldse trace import --format torch-profiler`: phases from record_function scopes, FLOPs
from recorded shapes equal to torch's own counter."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the 'torch' extra")

from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from rldse.cli import main  # noqa: E402
from rldse.trace import load_trace  # noqa: E402

SCHEDULE = ["--set", "batch_size=16", "--set", "replay_capacity=1000",
            "--set", "learning_starts=0", "--set", "learn_every=1", "--set", "target_sync=100"]


def _loop(net, opt, x):
    with record_function("act"), torch.no_grad():
        net(x[:1])
    with record_function("learn"):
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(net.parameters())
    x = torch.randn(16, 4)
    with FlopCounterMode(display=False) as counter:
        _loop(net, opt, x)
    path = tmp_path_factory.mktemp("prof") / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(3):
            _loop(net, opt, x)
    prof.export_chrome_trace(str(path))
    return path, counter.get_total_flops()


def test_import_has_act_and_learn_with_torch_counter_flops(profiled, tmp_path, capsys):
    path, flops_per_iteration = profiled
    out = tmp_path / "p.parquet"
    code = main(["trace", "import", str(path), "--format", "torch-profiler", "--env",
                 "CartPole-v1", "--layers", "4,64,2", *SCHEDULE, "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    ops = load_trace(out).ops
    act, learn = ops[ops["phase"] == "act"], ops[ops["phase"] == "learn"]
    assert len(act) == 3 and len(learn) == 3
    assert (act["flops"] == 2 * 1 * (4 * 64 + 64 * 2)).all() and (act["items"] == 1).all()
    assert (learn["items"] == 16).all() and (learn["bytes"] > 0).all()
    assert int(act["flops"].iloc[0] + learn["flops"].iloc[0]) == flops_per_iteration


def test_swiftrl_option_with_profiler_format_is_refused(profiled, tmp_path, capsys):
    code = main(["trace", "import", str(profiled[0]), "--format", "torch-profiler",
                 "--agents", "4", "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--agents" in err


def test_json_without_phase_scopes_is_one_line(tmp_path, capsys):
    bad = tmp_path / "t.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                   '"ts": 0, "dur": 1, "args": {}}]}')
    code = main(["trace", "import", str(bad), "--format", "torch-profiler", "--env", "X",
                 "--layers", "4,2", *SCHEDULE, "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and "record_function" in err and err.count("\n") == 1


@pytest.mark.parametrize("args, named", [
    ([], ["--env", "--layers"]),
    (["--env", "X", "--layers", "4,2"],
     ["batch_size", "replay_capacity", "learning_starts", "learn_every", "target_sync"]),
])
def test_missing_arguments_all_named_before_the_profile_is_read(tmp_path, capsys, args, named):
    """A profile takes minutes to parse: every missing argument is named at once, first
    (the file here is not even JSON)."""
    garbage = tmp_path / "t.json"
    garbage.write_text("not json")
    code = main(["trace", "import", str(garbage), "--format", "torch-profiler", *args,
                 "-o", str(tmp_path / "x.parquet")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert all(name in err for name in named), err
