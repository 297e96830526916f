"""Pinned CPU numerics (trb/numerics.py): the demo runs on the same kernels and thread count on every machine, and
refuses to run on others, naming what differs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from trb.numerics import PINNED_ENV

_PROBE = """
import hashlib, json, sys
{before}
import torch
from trb.numerics import check_pinned, describe, pinned_threads
from trb.errors import UsageError
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64), torch.nn.LogSoftmax(-1))
x = torch.randn(32, 64)
with torch.no_grad():
    out = net(x).numpy().tobytes()
with pinned_threads(1):
    inside = torch.get_num_threads()
try:
    check_pinned("the probe")
    refused = None
except UsageError as e:
    refused = str(e)
print(json.dumps({{"sha": hashlib.sha256(out).hexdigest(), "numerics": describe(), "inside": inside,
                  "refused": refused}}))
"""


def _probe(before: str, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED_ENV and k != "OMP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(before=before)], env={**clean, **env},
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.skipif("avx2" not in open("/proc/cpuinfo").read(), reason="the pins need a processor with AVX2")
def test_the_pins_choose_avx2_kernels_one_thread_and_the_same_bits_whatever_the_thread_count():
    pinned = "from trb.numerics import pin_environment; pin_environment()"
    one = _probe(pinned, OMP_NUM_THREADS="1")
    two = _probe(pinned, OMP_NUM_THREADS="2")
    assert one["refused"] is None and two["refused"] is None
    assert one["numerics"]["cpu_capability"] == "AVX2" and one["numerics"]["mkl_cbwr"] == "AVX2,STRICT"
    assert one["numerics"]["threads"] == 1 and two["numerics"]["threads"] == 2 and two["inside"] == 1
    assert one["sha"] == two["sha"]  # the same bits on one thread and on two


def test_a_process_that_imported_torch_before_the_pins_is_refused_with_what_differs():
    # torch at work first (on its plain kernels), the pins set after: the variables say pinned, its kernels do not
    late = _probe("import torch\ntorch.randn(8).exp().sum()\nfrom trb.numerics import pin_environment\n"
                  "pin_environment()", ATEN_CPU_CAPABILITY="default")
    assert late["refused"] is not None and "torch was imported before the pins were set" in late["refused"]
    assert "ATEN_CPU_CAPABILITY=avx2" in late["refused"]  # how to run it pinned



def test_each_variable_that_is_not_pinned_is_named(monkeypatch):
    from trb.errors import UsageError
    from trb.numerics import check_pinned

    for name in PINNED_ENV:
        monkeypatch.delenv(name)
    with pytest.raises(UsageError) as refused:
        check_pinned("the probe")
    for name, value in PINNED_ENV.items():
        assert f"{name}=None (pinned: {value!r})" in str(refused.value), name


def test_the_demo_refuses_unpinned_numerics_before_writing_anything(tmp_path, monkeypatch, capsys):
    from pipeline.cli import main as demo_main
    from trb.errors import ExitCode

    monkeypatch.setenv("MKL_CBWR", "AUTO")  # changed after trb-demo pinned it
    assert demo_main(["--workdir", str(tmp_path / "demo"), "-q"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "the demo runs on pinned CPU numerics" in err and "MKL_CBWR='AUTO' (pinned: 'AVX2,STRICT')" in err
    assert "Traceback" not in err and not (tmp_path / "demo").exists()
