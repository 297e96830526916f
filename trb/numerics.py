"""Pinned CPU numerics: the kernels and the thread count under which a CPU run's figures are the same, bit for bit,
on any x86-64 machine with AVX2.

PyTorch's CPU build picks its kernels by the processor: ATen's vectorised kernels (softmax, GELU, reductions) at the
widest instruction set the processor has (AVX2, AVX-512), MKL's matrix products likewise, and oneDNN's too. Each
choice rounds differently, and a model *trained* on the CPU carries those differences into every figure measured
on it: unpinned, the demo's Δgov moved in its third decimal from one machine to another and from two threads to one
(the thread count splits the training's parallel reductions differently; bench/README.md, "make demo"). The pins make every x86-64 machine with AVX2 run the same code:

* ``ATEN_CPU_CAPABILITY=avx2``, ``MKL_CBWR=AVX2,STRICT`` (MKL's conditional numerical reproducibility) and
  ``ONEDNN_MAX_CPU_ISA=AVX2``: each read once, when torch first computes, so they are set before that
  (:func:`pin_environment`, which ``trb-demo``, ``make demo-conclusions`` and the test suite call first thing);
* one thread (:func:`pinned_threads`): MKL's results are reproducible only for the same thread count, and one
  thread is also what each of the suite's two workers on two cores should use.

:func:`check_pinned` refuses work whose figures are quoted (the demo) in a process where torch was imported before
the pins were set, and :func:`describe` is what a run records of its numerics.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from trb.errors import UsageError

__all__ = ["PINNED_ENV", "PINNED_THREADS", "PINNED_CAPABILITY", "pin_environment", "check_pinned", "describe",
           "pinned_threads"]

#: The variables that choose PyTorch's CPU kernels, and the values every AVX2 machine can run.
PINNED_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2"}
#: What ``torch.backends.cpu.get_cpu_capability()`` says under the pins.
PINNED_CAPABILITY = "AVX2"
#: The thread count of a pinned run.
PINNED_THREADS = 1


def pin_environment() -> None:
    """Set :data:`PINNED_ENV` in this process's environment (and its children's). Effective only before torch
    first computes: call it first thing; :func:`check_pinned` tells afterwards whether it was in time."""
    os.environ.update(PINNED_ENV)


def _unpinned() -> list[str]:
    """What is not pinned in this process: the variables with another value, and torch's kernel choice."""
    wrong = [f"{k}={os.environ.get(k)!r} (pinned: {v!r})" for k, v in PINNED_ENV.items() if os.environ.get(k) != v]
    if "torch" in sys.modules:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
        if capability != PINNED_CAPABILITY:
            wrong.append(f"torch runs {capability} kernels (pinned: {PINNED_CAPABILITY}; torch was imported before "
                         "the pins were set, or the processor lacks AVX2)")
    return wrong


def check_pinned(what: str) -> None:
    """Refuse ``what`` (whose figures are quoted and must be the same on every machine) when this process does not
    run the pinned kernels: UsageError naming each difference and how to run it pinned."""
    wrong = _unpinned()
    if wrong:
        raise UsageError(f"{what} runs on pinned CPU numerics (trb.numerics), and this process does not: "
                         + "; ".join(wrong) + ". Run it through its command (trb-demo), or set "
                         + " ".join(f"{k}={v}" for k, v in PINNED_ENV.items()) + " before torch is imported")


def describe() -> dict:
    """This process's CPU numerics, as a run records them: torch's version, its kernels, threads and the pins."""
    import torch

    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(), **{k.lower(): os.environ.get(k) for k in PINNED_ENV}}


@contextlib.contextmanager
def pinned_threads(n: int = PINNED_THREADS) -> Iterator[None]:
    """torch on ``n`` threads inside the block, the thread count of before restored after it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
