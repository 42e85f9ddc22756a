"""The parts of a probe job that come before judging: the identities of its judge runs, the
reference qrels and the sample they give, and each probe's copies of the sampled documents."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

from qrelkit.commands.probe_result import Sample
from qrelkit.commands.requests import ProbeRequest, QrelsRef
from qrelkit.commands.workspace import Workspace
from qrelkit.errors import QrelkitError
from qrelkit.io import Document, Qrels, Topic, sha256_text
from qrelkit.io.collection import with_fields
from qrelkit.io.files import read_owned, write_atomically
from qrelkit.io.folders import FolderRefused
from qrelkit.io.paths import irds_id
from qrelkit.jobs.plan import ResolvedJudge, build_pool
from qrelkit.jobs.pool import sample_pool
from qrelkit.jobs.runner import ProgressCallback
from qrelkit.jobs.spec import JobSpec
from qrelkit.judges import Pair
from qrelkit.probes import Probe, perturb
from qrelkit.storage import Store
from qrelkit.storage.perturbations import CopyRow, document_inputs
from qrelkit.storage.pools import pool_pairs

Judge = ResolvedJudge  # the job's judge, resolved once (`qrelkit.jobs.plan.resolve_judge`)
ProgressFor = Callable[[str], AbstractContextManager[ProgressCallback | None]]
CONTROL = "unperturbed"  # the control run: the job's judge on the sample as it is


# -- identities --------------------------------------------------------------------------------------


def probe_run_id(judge_run_id: str, probe: Probe) -> str:
    """A probe's judge run: the job's judge run (judge, options, template, model) and the probe (its
    perturbation, parameters and seed); any change of either is a new run."""
    return sha256_text(json.dumps({"judge_run": judge_run_id, "probe": probe.content_hash}, sort_keys=True))[:16]


def control_run_id(judge_run_id: str) -> str:
    """The probes' control run: the job's judge on the sampled documents as they are. A judge run of
    its own, not the job's: a judge run covers its pool or one sample of it, and a probe's sample
    (pairs the reference calls non-relevant) is neither."""
    return sha256_text(json.dumps({"judge_run": judge_run_id, "probe": CONTROL}, sort_keys=True))[:16]


def probe_record(judge_run_id: str, probe: Probe) -> dict[str, Any]:
    """What the probe's judge run records of its probe (`judge_runs.probe`): the probe, the job's
    judge run whose documents it perturbs, and the control run it is compared with."""
    return {**probe.describe(), "perturbs": judge_run_id, "control": control_run_id(judge_run_id)}


def control_record(judge_run_id: str) -> dict[str, Any]:
    """What the control run records (`judge_runs.probe`): no perturbation."""
    tests = "Nothing: the sampled documents as they are, what each probe's run is compared with."
    return {"probe": CONTROL, "perturbation": None, "tests": tests, "perturbs": judge_run_id}


# -- the sample ------------------------------------------------------------------------------------


def reference_qrels(store: Store, spec: JobSpec, request: ProbeRequest, workspace: Workspace) -> Qrels:
    """The qrels that say which pairs are non-relevant: as the request names them, else the set the
    job's pool reads, else the job's only qrels set."""
    ref = request.reference
    if ref is None:
        loaded = sorted(spec.collection.qrels)
        if spec.pool.qrels is not None:
            ref = spec.pool.qrels
        elif len(loaded) == 1:
            ref = loaded[0]
        else:
            what = f"loads {len(loaded)} qrels sets ({', '.join(loaded)})" if loaded else "loads no qrels"
            raise QrelkitError(f"{request.job}: the job {what}: name the reference with --reference-qrels SET_OR_FILE")
    names = store.qrels_names()
    if ref in names:
        return store.qrels(ref)
    if not Path(ref).is_file() and irds_id(ref) is None:  # the database is open here: the name is looked up in it, once
        sets = ", ".join(sorted(names)) or "none"
        raise QrelkitError(f"--reference-qrels {ref!r}: no such file, and no qrels set of that name in {spec.database} (its sets: {sets})")
    return workspace.qrels(QrelsRef.of(ref, file_label=True))


def choose_sample(store: Store, spec: JobSpec, reference: Qrels, request: ProbeRequest) -> Sample:
    """The pairs of the job's pool whose reference grade is one of ``request.grades`` and whose topic
    and document the collection holds, sampled over the topics (`sample_pool`, seeded)."""
    grades, wanted = reference.grades, set(request.grades)
    pool = pool_pairs(store, build_pool(store, spec))
    candidates = [(q, d) for q, d in pool if grades.get(q, {}).get(d) in wanted]
    held = document_inputs(store, sorted({d for _, d in candidates}))
    topics = {t.qid for t in store.topics()}
    candidates = [(q, d) for q, d in candidates if d in held and q in topics]
    if not candidates:
        shown = ", ".join(map(str, request.grades))
        raise QrelkitError(f"{request.job}: no pair of the job's pool has reference grade {shown} in {reference.name}: nothing to probe")
    chosen = sorted(sample_pool(candidates, request.sample, request.seed))
    pool_topics = len({q for q, _ in pool})
    return Sample(chosen, len(candidates), reference.name, request.grades, request.sample, request.seed, len(pool), pool_topics)


# -- the perturbed copies --------------------------------------------------------------------------


class Collection(NamedTuple):
    """The topics, the sampled documents and what their copies are made from (`document_inputs`)."""

    topics: dict[str, Topic]
    documents: dict[str, Document]
    inputs: dict[str, tuple[str, str]]


def collection(store: Store, pairs: list[tuple[str, str]]) -> Collection:
    docids = sorted({d for _, d in pairs})
    return Collection({t.qid: t for t in store.topics()}, store.documents(docids), document_inputs(store, docids))


def copies_folder(database: Path, judge_run_id: str) -> Path:
    """Where a probe's image copies are written: beside the database, a folder per judge run."""
    return database.with_name(database.name + ".probes") / judge_run_id


def _write_image(path: Path, data: bytes, root: Path) -> None:
    """The file at ``path`` holds ``data``: a file there already is kept when its bytes are these;
    else written whole under a hidden name and renamed (a kill leaves no half file), in ``root``
    (`<db>.probes`, qrelkit's own: no link in it is followed, nothing written elsewhere)."""
    try:
        if read_owned(path, len(data), root=root) == data:
            return
    except FolderRefused:
        pass  # not these bytes (larger), or no file of the folder: writing it says which
    write_atomically(path, lambda temporary: temporary.write_bytes(data), root=root)


def make_copies(probe: Probe, pairs: list[tuple[str, str]], found: Collection, folder: Path) -> list[CopyRow]:
    """Each pair's copy under ``probe``, hashed as its judgment will record it; image copies written
    into ``folder`` (as <sha256>.png)."""
    rows = []
    for qid, docid in pairs:
        source_hash, fields = found.inputs[docid]
        made = perturb(probe, found.topics[qid], found.documents[docid])
        if made.error is not None:
            rows.append(CopyRow(qid, docid, source_hash, "", error=made.error))
        elif made.text is not None:
            rows.append(CopyRow(qid, docid, source_hash, with_fields(made.sha256, fields), text=made.text))
        else:
            assert made.image is not None
            name = f"{made.sha256}.png"
            _write_image(folder / name, made.image, root=folder.parent)
            rows.append(CopyRow(qid, docid, source_hash, with_fields(made.sha256, fields), None, name, str(folder), made.sha256))
    return rows


def run_pairs(probe: Probe | None, todo: list[tuple[str, str]], found: Collection, folder: Path) -> list[Pair]:
    """The pairs a run would put to its judge (`qrelkit probe --dry-run`): as they are, or the probe's copies."""
    if probe is None:
        return [Pair(found.topics[q], found.documents[d]) for q, d in todo]
    pairs = []
    for row in make_copies(probe, todo, found, folder):
        if row.error is None:
            source = found.documents[row.docid]
            copy = Document(row.docid, row.text, row.image_path, row.image_root, source.fields, row.image_sha256)
            pairs.append(Pair(found.topics[row.qid], copy))
    return pairs


def runs_of(probes: list[Probe], judge: Judge) -> Iterator[tuple[str, Judge, dict[str, Any]]]:
    """(name, judge, probe record) of the control run, then of each probe's run."""
    yield CONTROL, dataclasses.replace(judge, judge_run_id=control_run_id(judge.judge_run_id)), control_record(judge.judge_run_id)
    for probe in probes:
        run_id = probe_run_id(judge.judge_run_id, probe)
        yield probe.id, dataclasses.replace(judge, judge_run_id=run_id), probe_record(judge.judge_run_id, probe)
