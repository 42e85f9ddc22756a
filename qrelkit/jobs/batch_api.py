"""The Batch API route of a judging job: write request files, record, upload, create; later check,
download and collect. It writes the database (through `storage.batch_api`) and nothing else does;
the judge only builds request bodies, lends its client, and reads answer lines.

Crash safety comes from the order of the steps (see `storage/batch_api.py`) and from asking the
API, not our memory, what happened in the gaps. Every run of the job, and `qrelkit batches`,
first reconciles the submissions a crash may have left half-done:

* `prepared` (recorded; the upload may or may not have happened): the API's batch list is searched
  for the submission id in a batch's metadata, then its file list for the file name (which holds
  the submission id). Found: recorded and carried on. Neither: nothing was sent; the submission is
  dropped and its pairs are pending again.
* `uploaded` (file id recorded; the create may or may not have happened): the batch list is
  searched; found, it is recorded; else the batch is created (a job run only).
* `submitted`: the batch is checked; once finished, its output and error files are read and every
  pair gets its judgment (or goes back to pending) in one transaction with the state `collected`.
  A crash mid-download stores nothing, and the next run reads the files again.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path
from typing import Any

from qrelkit.errors import QrelkitError
from qrelkit.io.files import exclusive_temporary, place_for, put_in_place
from qrelkit.io.limits import iter_chunk_lines, limits
from qrelkit.judges import Judgment, Pair
from qrelkit.judges.batch_api import (
    META_JUDGE_RUN,
    META_SUBMISSION,
    BatchApiError,
    BatchEndpoint,
    BatchInfo,
    BatchLine,
    custom_id_for,
    parse_custom_id,
    read_output_line,
    request_line,
    starts_new_file,
)
from qrelkit.judges.http import ErrorVerdict
from qrelkit.storage import Store
from qrelkit.storage import batch_api as recorded
from qrelkit.storage.judgments import judgment_states, write_judgments
from qrelkit.storage.store import crash_point

log = logging.getLogger(__name__)


def batch_folder(database: Path) -> Path:
    """Where a database's batch request files are written while their batches are open."""
    return database.with_name(database.name + ".batches")


@dataclass
class BatchActivity:
    """What one pass of the driver did."""

    submitted: list[str] = field(default_factory=list)  # submission ids created by this run
    requests: int = 0  # requests sent in them
    collected: list[str] = field(default_factory=list)  # submission ids collected by this run
    judged: int = 0  # judgments written by this run (input errors included)
    statuses: Counter[str] = field(default_factory=Counter)  # of those judgments
    failed: set[tuple[str, str]] = field(default_factory=set)  # pairs whose judgment by this run failed: not retried in it
    resubmit: int = 0  # pairs collected batches sent back to pending

    def record(self, judgments: list[Judgment]) -> None:
        self.judged += len(judgments)
        self.statuses.update(j.status for j in judgments)
        self.failed.update((j.qid, j.docid) for j in judgments if j.status != "ok")


class EndpointMismatch(QrelkitError):
    """A batch was sent to another endpoint, or with another key variable, than this command would use."""


def submission_endpoint(sub: recorded.Submission) -> BatchEndpoint:
    """Where a submission's batch went: as its judge declared it, recorded with it. A submission
    recorded before endpoints were (schema 11) is read here, and only here, the way qrelkit read it
    then, from its judge options: options without a `base_url` were the `vllm` judge's (its runner on
    this machine); the others went to their base_url (OpenAI's when None) with the key in api_key_env."""
    if sub.endpoint is not None:
        return BatchEndpoint(sub.endpoint, sub.key_variable)
    if "base_url" not in sub.options:
        from qrelkit.judges.vllm_batch import ENDPOINT as LOCAL_RUNNER

        return BatchEndpoint(LOCAL_RUNNER)
    return BatchEndpoint.remote(sub.options.get("base_url"), str(sub.options.get("api_key_env") or "OPENAI_API_KEY"))


class BatchDriver:
    """The batches of one judge run, driven through one judge (`qrelkit.judges.base.BatchJudge`), to
    the endpoint the judge declares.
    ``elsewhere``: what to do about an open batch of the judge run that the database says was sent
    to another endpoint: `refuse` (a job: stop with the mismatch line, before anything is sent) or
    `skip` (`qrelkit batches`, which drives each endpoint's batches with a driver of its own)."""

    def __init__(self, store: Store, judge_run_id: str, judge: Any, options: dict[str, Any], folder: Path, *, elsewhere: str = "refuse"):
        self.store, self.judge_run_id, self.judge, self.options = store, judge_run_id, judge, options
        self.folder, self.elsewhere = folder, elsewhere
        self.settings = judge.batch_settings()
        self.endpoint: BatchEndpoint = judge.batch_endpoint()
        self.client = judge.batch_client(folder)
        self.activity = BatchActivity()

    def close(self) -> None:
        self.client.close()

    def _open(self) -> list[recorded.Submission]:
        """This judge run's open submissions on this driver's endpoint, the endpoints compared in one
        spelling. One the database says went elsewhere stops a job (EndpointMismatch: its pairs would
        wait forever, or be paid twice), and is left to its own driver in `qrelkit batches`."""
        endpoint = self.endpoint.url
        found = recorded.submissions(self.store, self.judge_run_id, open_only=True)
        other = [s for s in found if submission_endpoint(s).url != endpoint]
        if other and self.elsewhere == "refuse":
            sub, went = other[0], submission_endpoint(other[0]).url
            raise EndpointMismatch(
                f"batch {sub.batch_id or sub.submission_id} of judge run {self.judge_run_id} ({sub.requests} pairs) was sent to "
                f"{went}, the database says; this job reaches {endpoint}, so nothing was checked or sent. "
                f"Check it with `qrelkit batches --base-url {went}` if you trust that endpoint, or set the job's base_url to it"
            )
        return [s for s in found if submission_endpoint(s).url == endpoint]

    # -- reconciling what a crash left -------------------------------------------------------

    def reconcile(self, *, create_missing: bool) -> None:
        half_done = [s for s in self._open() if s.state != "submitted"]
        if not half_done:
            return
        found = self.client.find_batches(s.submission_id for s in half_done)
        for sub in half_done:
            if sub.submission_id in found:
                info = found[sub.submission_id]
                log.info("batch %s of submission %s found on the API; recorded", info.id, sub.submission_id)
                recorded.set_submitted(
                    self.store, sub.submission_id, batch_id=info.id, input_file_id=info.input_file_id, status=info.status
                )
        prepared = [s for s in half_done if s.state == "prepared" and s.submission_id not in found]
        files = self.client.find_files(s.file_name for s in prepared)
        for sub in prepared:
            if sub.file_name in files:
                recorded.set_uploaded(self.store, sub.submission_id, files[sub.file_name])
            else:
                log.info("submission %s never reached the API; its %d pairs are pending again", sub.submission_id, sub.requests)
                recorded.forget_submission(self.store, sub.submission_id)
                remove_request_file(self.folder, sub.request_file)
        if create_missing:
            for sub in self._open():
                if sub.state == "uploaded":
                    self._create(sub.submission_id, sub.input_file_id or "")

    # -- submitting ------------------------------------------------------------------------------

    def submit(self, pairs: Iterable[Pair]) -> None:
        """Send the pairs in as many files as the limits need; input errors are written at once."""
        for submission_id, path, keys, size in self._request_files(pairs):
            file_name = path.name
            recorded.record_submission(
                self.store,
                submission_id=submission_id,
                judge_run_id=self.judge_run_id,
                file_name=file_name,
                request_file=str(path),
                pairs=keys,
                size=size,
                options=self.options,
                endpoint=self.endpoint.url,
                key_variable=self.endpoint.key_variable,
                created_unix=int(time.time()),
            )
            crash_point("batch-after-record")
            self.activity.submitted.append(submission_id)
            self.activity.requests += len(keys)
            try:
                file_id = self.client.upload(path, file_name)
            except BatchApiError as exc:
                if exc.refused:  # the server said no: no file exists, nothing can be paid
                    recorded.forget_submission(self.store, submission_id)
                    remove_request_file(self.folder, str(path))
                raise
            crash_point("batch-after-upload")
            recorded.set_uploaded(self.store, submission_id, file_id)
            self._create(submission_id, file_id)

    def _create(self, submission_id: str, file_id: str) -> None:
        metadata = {META_JUDGE_RUN: self.judge_run_id, META_SUBMISSION: submission_id}
        try:
            info = self.client.create(file_id, metadata)
        except BatchApiError as exc:
            if exc.refused:
                recorded.forget_submission(self.store, submission_id)
            raise
        crash_point("batch-after-create")
        recorded.set_submitted(self.store, submission_id, batch_id=info.id, input_file_id=info.input_file_id or file_id, status=info.status)
        log.info("batch %s created for submission %s", info.id, submission_id)

    def _request_files(self, pairs: Iterable[Pair]) -> Iterator[tuple[str, Path, list[tuple[str, str]], int]]:
        """Write request lines into files within the limits, yielding each file as it is full (so that
        images are read once and never all held in memory, and the pairs are read as they come);
        input errors are written with each file."""
        limits = self.settings
        errors: list[Judgment] = []
        current: tuple[str, Path, RequestFile] | None = None
        keys: list[tuple[str, str]] = []
        size = 0
        try:
            for pair in pairs:
                body = self.judge.batch_request(pair)
                if isinstance(body, Judgment):
                    errors.append(body)
                    continue
                line = request_line(custom_id_for(self.judge_run_id, *pair.key), body)
                if len(line) > limits.max_bytes:
                    message = f"the request is {len(line):,} bytes, more than a batch file may hold (batch_max_bytes {limits.max_bytes:,})"
                    errors.append(Judgment.failed(pair, "input_error", message))
                    continue
                if current is not None and starts_new_file(len(keys), size, len(line), limits.max_requests, limits.max_bytes):
                    current[2].finish()
                    yield current[0], current[1], keys, size
                    current, keys, size = None, [], 0
                    self.write(errors)
                    errors = []
                if current is None:
                    submission_id = secrets.token_hex(8)
                    path = place_for(self.folder / f"qrelkit-{self.judge_run_id}-{submission_id}.jsonl", root=self.folder)
                    current = (submission_id, path, RequestFile(path))
                current[2].write(line)
                keys.append(pair.key)
                size += len(line)
            if current is not None:
                current[2].finish()
                yield current[0], current[1], keys, size
            self.write(errors)
        finally:
            if current is not None:
                current[2].abandon()  # a generator closed part-way (an error, an interrupt)

    def write(self, judgments: list[Judgment]) -> None:
        """Judgments decided without a batch (input errors)."""
        if judgments:
            write_judgments(self.store, self.judge_run_id, judgments)
            self.activity.record(judgments)

    # -- checking and collecting -------------------------------------------------------------------

    def check(self) -> list[recorded.Submission]:
        """Ask the API about every submitted batch; collect the finished ones. The submissions after."""
        for sub in self._open():
            if sub.state != "submitted" or not sub.batch_id:
                continue
            info = self.client.retrieve(sub.batch_id)
            self._record_status(sub.submission_id, info)
            if info.terminal:
                self._collect(sub, info)
        if self.folder.is_dir() and not any(self.folder.iterdir()):
            self.folder.rmdir()  # every request file's batch is collected
        return recorded.submissions(self.store, self.judge_run_id)

    def _collect(self, sub: recorded.Submission, info: BatchInfo) -> None:
        sent = recorded.submission_pairs(self.store, sub.submission_id)
        keys = set(sent)
        lines: dict[tuple[str, str], BatchLine] = {}
        seen: Counter[tuple[str, str]] = Counter()  # lines per pair: one, unless the output repeats a custom_id
        for file_id in (info.output_file_id, info.error_file_id):
            if file_id:
                for line in self._read_lines(file_id):
                    parsed = parse_custom_id(line.custom_id)
                    if parsed is None or parsed[0] != self.judge_run_id or parsed[1:] not in keys:
                        continue  # not a line of this submission
                    seen[parsed[1:]] += 1
                    if parsed[1:] not in lines or line.status_code == 200:
                        lines[parsed[1:]] = line
        history = recorded.batch_history(self.store, self.judge_run_id, sub.submission_id)
        states = judgment_states(self.store, self.judge_run_id, sub.submission_id)
        judgments, again = [], []
        for key in sorted(keys):
            answer = lines.get(key)
            judgment = self.judge.batch_judgment(*key, answer)
            tries = _trailing_resubmits(history.get(key, [])) + 1
            if judgment is None and tries < self.settings.max_tries:
                again.append(key)
                continue
            if judgment is None:
                judgment = Judgment(*key, "model_error", error=f"{why_not_run(answer, info)} (in {tries} batches)")
            judgment.attempts = states.get(key, ("", 0))[1] + tries
            if seen[key] > 1:
                judgment.notes = (
                    f"the batch {info.id} answered this pair in {seen[key]} lines (one custom_id repeated); {_kept(answer)} was kept"
                )
                log.warning("batch %s: %d lines for %s/%s (a repeated custom_id)", info.id, seen[key], *key)
            judgments.append(judgment)
        crash_point("batch-before-collect")
        recorded.collect_submission(self.store, sub.submission_id, self.judge_run_id, judgments, again, sent)
        remove_request_file(self.folder, sub.request_file)
        self.activity.collected.append(sub.submission_id)
        self.activity.record(judgments)
        self.activity.resubmit += len(again)
        log.info("batch %s %s: %d judgments stored, %d pairs pending again", info.id, info.status, len(judgments), len(again))

    def _read_lines(self, file_id: str) -> Iterator[BatchLine]:
        """The lines of an output or error file, read as they stream in (nothing is written to disk),
        each at most `max_line_bytes`: a longer line stops the reading with one line (an endless one
        would otherwise be read to the file's cap), nothing of the batch stored, its pairs still out."""
        cap = limits().max_line_bytes
        for raw in iter_chunk_lines(_arriving(self.client.download(file_id)), cap, stop=True):
            if raw is None:
                message = (
                    f"batch file {file_id} holds a line longer than {cap:,} bytes (QRELKIT_MAX_LINE_BYTES; raise it if the "
                    "answers are genuine); not read further, nothing of the batch was stored"
                )
                raise BatchApiError(message, ErrorVerdict("fail", message))
            if raw.strip():
                yield from _parse(raw, file_id)

    # -- cancelling -------------------------------------------------------------------------------

    def _record_status(self, submission_id: str, info: BatchInfo) -> None:
        """What the API said of a batch, kept on its submission."""
        recorded.set_status(
            self.store,
            submission_id,
            status=info.status,
            total=info.total,
            completed=info.completed,
            failed=info.failed,
            output_file_id=info.output_file_id,
            error_file_id=info.error_file_id,
            errors="; ".join(info.errors) or None,
        )

    def cancel(self, submission: recorded.Submission) -> BatchInfo:
        if submission.state != "submitted" or not submission.batch_id:
            what = submission.batch_id or f"of submission {submission.submission_id}"
            raise QrelkitError(f"batch {what} is {submission.status or submission.state}, not running: nothing to cancel")
        info = self.client.cancel(submission.batch_id)
        self._record_status(submission.submission_id, info)
        return info


def _arriving(chunks: Iterable[bytes]) -> Iterator[bytes]:
    for number, chunk in enumerate(chunks):
        if number == 0:
            crash_point("batch-mid-download")
        yield chunk


def _parse(raw: bytes, file_id: str) -> Iterator[BatchLine]:
    try:
        yield read_output_line(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # its pair is treated as not run, and sent again
        log.warning("batch file %s: a line that is not a Batch API output line (%s) was skipped", file_id, exc)


def _kept(line: BatchLine | None) -> str:
    if line is None:
        return "none"
    return "the first HTTP 200 answer" if line.status_code == 200 else "the first line"


def _trailing_resubmits(outcomes: list[str]) -> int:
    return len(list(takewhile(lambda outcome: outcome == "resubmit", reversed(outcomes))))


def why_not_run(line: BatchLine | None, info: BatchInfo) -> str:
    """Why a pair got no answer from a batch, for the judgment that ends its retries."""
    if line is None:
        detail = f": {'; '.join(info.errors)}" if info.errors else ""
        return f"no answer: the batch {info.id} {info.status}{detail}"
    if line.error_code:
        return f"{line.error_code}: {line.error_message or ''}".strip()
    return f"HTTP {line.status_code} from the batch {info.id}"


class RequestFile:
    """A batch's request file as it is written: lines go to a hidden temporary of the folder, renamed
    to ``path`` once whole (`qrelkit.io.files.put_in_place`), so a kill leaves no half file that a
    later run could take for a whole one; removed if the writing stops."""

    def __init__(self, path: Path):
        self.path, self.temporary = path, exclusive_temporary(path)
        self.handle = open(self.temporary, "wb")

    def write(self, line: bytes) -> None:
        self.handle.write(line)

    def finish(self) -> None:
        self.handle.close()
        try:
            put_in_place(self.temporary, self.path)
        finally:
            self.temporary.unlink(missing_ok=True)

    def abandon(self) -> None:
        """Stop writing: the temporary goes, nothing appears at ``path``."""
        self.handle.close()
        self.temporary.unlink(missing_ok=True)


def remove_request_file(folder: Path, path: str | None) -> bool:
    """Remove a batch's request file, which the database names, only when it is a file of qrelkit's own
    folder ``folder`` (`<db>.batches/`) once links are resolved: a database is data, and a path stored
    in it never chooses which file is deleted. False when the path was left alone."""
    if not path:
        return False
    # Only the name is taken from the database, and only a name qrelkit gives its request files: the
    # file removed is that name in ``folder`` (however the folder was reached, relative or not).
    name = Path(path).name
    target = folder / name
    ours = name.startswith("qrelkit-") and name.endswith(".jsonl") and Path(path).parent.resolve() == folder.resolve()
    if not ours or target.is_symlink() or target.parent.resolve() != folder.resolve() or (target.exists() and not target.is_file()):
        log.warning("the request file %r a batch submission records is not a file of %s; it was left alone", path, folder)
        return False
    target.unlink(missing_ok=True)
    return True


def poll_delays(initial: float, maximum: float) -> Iterator[float]:
    """Waits between checks: initial, doubling, at most ``maximum``."""
    delay = initial
    while True:
        yield min(delay, maximum)
        delay = min(delay * 2, maximum)
