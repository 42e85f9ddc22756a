"""Whether a judge can start, found before a job writes anything: its backend installed, its key
variable set, its model files present, the device it asks for there, and (only when asked) its
endpoint answering one cheap request.

Each check returns a line naming what is missing and how to fix it (None when it is fine); a judge's
`startup_problems` collects them without loading a model (`importlib.util.find_spec` finds a package
without importing it). The job's preflight (`qrelkit.jobs.preflight`) runs them before the database
is created, for a dry run and a real run alike.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing, or a half-installed one
        return False


def missing_module(module: str, judge: str, install: str) -> str | None:
    return None if installed(module) else f"judge {judge!r} needs {module}, which is not installed: {install}"


def missing_modules(modules: dict[str, str], judge: str) -> list[str]:
    """Every module of ``modules`` (import name -> how to install it) that cannot be imported."""
    return [problem for module, install in modules.items() if (problem := missing_module(module, judge, install))]


def unset_variable(name: str, judge: str, fix: str) -> str | None:
    return None if os.environ.get(name) else f"judge {judge!r}: the environment variable {name} is not set; {fix}"


def missing_file(path: str | Path | None, judge: str, option: str, fix: str) -> str | None:
    if path is None or Path(path).expanduser().exists():
        return None
    return f"judge {judge!r}: {option} {str(path)!r} not found; {fix}"


def looks_like_path(model: str) -> bool:
    """A model named by a local path rather than a hub id (`org/name` is both; it is read as an id)."""
    return model.startswith(("/", "./", "../", "~")) or Path(model).expanduser().exists()


def missing_model(model: str, judge: str) -> str | None:
    """A model given as a local folder that is not there, or a hub id not in the local cache while
    the hub is offline (HF_HUB_OFFLINE): either way loading it would fail."""
    if looks_like_path(model):
        return missing_file(model, judge, "model", "give an existing model folder, or a Hugging Face hub id")
    if os.environ.get("HF_HUB_OFFLINE", "").lower() not in ("1", "true", "yes") or importlib.util.find_spec("huggingface_hub") is None:
        return None
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(model, "config.json")
    except Exception:  # noqa: BLE001 - not a valid repo id: loading will say so in its own words
        return None
    if isinstance(cached, str):
        return None
    return (
        f"judge {judge!r}: model {model!r} is not in the Hugging Face cache and HF_HUB_OFFLINE is set; "
        "download it first (huggingface-cli download MODEL) or give a local folder"
    )


def missing_device(device: str, judge: str) -> str | None:
    """A torch device asked for by name (cuda, cuda:N, mps) that is not present; 'auto' and 'cpu' always are."""
    if device in ("auto", "cpu") or importlib.util.find_spec("torch") is None:
        return None  # no torch: the backend check says so
    import torch

    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            return (
                f"judge {judge!r}: device {device!r} asked for, but no CUDA GPU is visible; "
                "set `device: cpu` (or auto), or run where a GPU is"
            )
        index = device.partition(":")[2]
        if index.isdigit() and int(index) >= torch.cuda.device_count():
            return (
                f"judge {judge!r}: device {device!r} asked for, but only {torch.cuda.device_count()} CUDA GPU(s) are visible; pick another"
            )
    if device == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            return f"judge {judge!r}: device 'mps' asked for, but Apple's MPS is not available here; set `device: cpu` (or auto)"
    return None


def endpoint_problem(url: str, headers: dict[str, str], judge: str, timeout: float = 10.0) -> str | None:
    """One GET of ``url`` (a server's model list: no tokens spent); a line when nothing answers or
    the answer is an error. The key travels in ``headers`` and never into the line."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the job's own endpoint
            response.read(1 << 16)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return f"judge {judge!r}: {url} refused the API key (HTTP {exc.code}); check the key's environment variable"
        return f"judge {judge!r}: {url} answered HTTP {exc.code}; check `base_url` (it should end in /v1)"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"judge {judge!r}: no answer from {url} ({reason}); start the server or fix `base_url`"
    return None
