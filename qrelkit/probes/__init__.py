"""Gullibility probes: named perturbations of the judged documents (YAML, like prompt templates),
applied to a pair deterministically given the probe's seed. Never calls a model, never writes."""

from qrelkit.probes.perturb import Perturbed, perturb
from qrelkit.probes.spec import Probe, ProbeError, builtin_ids, builtin_probes, load_probe, load_probes

__all__ = ["Perturbed", "Probe", "ProbeError", "builtin_ids", "builtin_probes", "load_probe", "load_probes", "perturb"]
