"""Judge runs and their judgments in the store. Only the job runner calls the writers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from qrelkit.errors import FatalJobError, StorageFailure, StoreError
from qrelkit.storage.coerce import JUDGMENT_COLUMNS, fallback_row, judgment_row, plain_columns
from qrelkit.storage.entries import registered

if TYPE_CHECKING:  # the store calls these functions: a runtime import would be a circle
    from qrelkit.storage.store import Store

# What a judgment's score can be graded by: the judge's own score, the parsed grade, the expected grade.
SCORE_COLUMNS = ("score", "parsed", "expected")
_TYPES = {
    **dict.fromkeys(("score", "parsed", "expected", "latency_ms", "cost"), pa.float64()),
    **dict.fromkeys(("tokens_in", "tokens_out", "attempts"), pa.int32()),
}


@dataclass(frozen=True)
class JudgeRunInfo:
    judge_run_id: str
    judge: str
    config: dict[str, Any]
    template_id: str | None
    template_hash: str | None
    template: dict[str, Any] | None
    model_id: str | None
    sample: dict[str, Any] | None = None  # the job ran on a sample of its pool (pairs, seed, topics, pool); None: the whole pool
    name: str | None = None  # imported runs are named by the user
    qrels_set: str | None = None  # the qrels set its job grades into (the job's grading.name)
    matched_by: str = "id"  # how a reference found it: "id", "id prefix" or "name"
    probe: dict[str, Any] | None = None  # a probe's run: the probe and the judge run it perturbs (docs/probes.md)


_INFO_COLUMNS = "judge_run_id, judge, config, template_id, template_hash, template, model_id, sample, name, qrels_set, probe"


def _info(row: tuple[Any, ...], matched_by: str = "id") -> JudgeRunInfo:
    rid, judge, config, template_id, template_hash, template, model_id, sample, name, qrels_set, probe = row
    return JudgeRunInfo(
        rid,
        judge,
        json.loads(config),
        template_id,
        template_hash,
        json.loads(template) if template else None,
        model_id,
        json.loads(sample) if sample else None,
        name,
        qrels_set,
        matched_by,
        json.loads(probe) if probe else None,
    )


def merged_sample(earlier: dict[str, Any] | None, now: dict[str, Any] | None) -> dict[str, Any] | None:
    """What a judge run covers after a job ran with ``now`` (None: its whole pool): a smaller sample
    of the same seed and pool after a larger one leaves the larger one (it holds the smaller).
    (A sample of another seed or pool is refused before judging: `qrelkit.jobs.plan.sample_check`.)"""
    if now is None or earlier is None:
        return now
    same_order = all(earlier.get(key) == now.get(key) for key in ("seed", "pool_pairs", "drawn_from"))
    return earlier if same_order and earlier.get("pairs", 0) >= now.get("pairs", 0) else now


def stored_sample(store: Store, judge_run_id: str) -> tuple[bool, dict[str, Any] | None]:
    """(whether the judge run is recorded, the sample it covers: None for its whole pool)."""
    row = store.con.execute("SELECT sample FROM judge_runs WHERE judge_run_id = ?", [judge_run_id]).fetchone()
    if row is None:
        return False, None
    return True, json.loads(row[0]) if row[0] else None


def judged_pairs(store: Store, judge_run_id: str) -> int:
    """How many pairs the judge run holds a judgment of (any status)."""
    return int(store._scalar("SELECT count(*) FROM judgments WHERE judge_run_id = ?", [judge_run_id]))


def ensure_judge_run(store: Store, info: JudgeRunInfo, *, update_sample: bool = True) -> bool:
    """Record the judge run if new, and what the job now running covers of its pool
    (``info.sample``; without ``update_sample``, as a probe judging its own pairs runs it, an
    existing run's record is left as it is); True when it was created."""
    exists, earlier = stored_sample(store, info.judge_run_id)
    if exists and not update_sample:
        return False
    if exists:
        if earlier is None and judged_pairs(store, info.judge_run_id):
            return False  # it judged (part of) its whole pool before: a sample now adds to that, it does not describe it
        sample = merged_sample(earlier, info.sample)
        if sample != earlier:
            with store.transaction() as con:
                con.execute(
                    "UPDATE judge_runs SET sample = ? WHERE judge_run_id = ?",
                    [json.dumps(sample, sort_keys=True) if sample else None, info.judge_run_id],
                )
        return False
    with store.transaction() as con:
        con.execute(
            "INSERT INTO judge_runs (judge_run_id, judge, config, template_id, template_hash, template, model_id, sample, probe) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                info.judge_run_id,
                info.judge,
                json.dumps(info.config, sort_keys=True),
                info.template_id,
                info.template_hash,
                json.dumps(info.template) if info.template else None,
                info.model_id,
                json.dumps(info.sample, sort_keys=True) if info.sample else None,
                json.dumps(info.probe, sort_keys=True) if info.probe else None,
            ],
        )
    return True


def judge_run(store: Store, judge_run: str) -> JudgeRunInfo:
    """A judge run by a reference (``judge_run``, as a user gives one): its name, its id, or a
    unique prefix of its id (taken literally, never as a pattern). A reference that is one run's
    name and another's id (prefix) is refused, never guessed; ``matched_by`` says how it matched,
    so that a caller can say when it was by name."""
    ref = judge_run.strip()
    found: dict[str, tuple[tuple[Any, ...], str]] = {}
    if ref:
        for row in store.con.execute(f"SELECT {_INFO_COLUMNS} FROM judge_runs WHERE starts_with(judge_run_id, ?)", [ref]).fetchall():
            found[row[0]] = (row, "id" if row[0] == ref else "id prefix")
        for row in store.con.execute(f"SELECT {_INFO_COLUMNS} FROM judge_runs WHERE name = ?", [ref]).fetchall():
            found.setdefault(row[0], (row, "name"))
    if len(found) == 1:
        row, how = next(iter(found.values()))
        return _info(row, how)
    if found:
        matches = ", ".join(f"{rid} (by {how})" for rid, (_, how) in sorted(found.items()))
        raise StoreError(f"{judge_run!r} matches more than one judge run in {store.path}: {matches}; give more of the id")
    known = [
        r[0] + (f" ({r[1]})" if r[1] else "")
        for r in store.con.execute("SELECT judge_run_id, name FROM judge_runs ORDER BY created_at").fetchall()
    ]
    raise StoreError(f"no judge run matches {judge_run!r} in {store.path} (judge runs: {', '.join(known) or 'none'})")


def name_collision(store: Store, name: str, *also: str) -> str | None:
    """The id of a judge run (stored, or among ``also``) that ``name`` equals or begins: a name that
    `--judge-run NAME` could not tell apart from an id."""
    ids = [r[0] for r in store.con.execute("SELECT judge_run_id FROM judge_runs WHERE starts_with(judge_run_id, ?)", [name]).fetchall()]
    ids += [rid for rid in also if rid.startswith(name)]
    return ids[0] if name and ids else None


@dataclass(frozen=True)
class ImportResult:
    judge_run_id: str
    name: str
    rows: int
    status: str  # "imported", "replaced" or "unchanged"


def import_scores(store: Store, scores: Any, *, name: str, replace: bool = False) -> ImportResult:
    """Store externally made scores (``qrelkit.io.scores.ScoresFile``) as a judge run of origin
    `imported` named ``name``: each score an `ok` judgment, so grading, agree and report work on it.
    The judge run's identity is the name and the file's hash; the same file again is unchanged, a
    changed file under the same name needs ``replace`` (which drops the earlier import)."""
    from qrelkit.io import sha256_text
    from qrelkit.io.paths import checked_name

    checked_name(name, "the judge run's name", scores.path)
    config = {"file": scores.path, "sha256": scores.sha256, "format": scores.format}
    run_id = sha256_text(json.dumps({"judge": "imported", "name": name, "sha256": scores.sha256}, sort_keys=True))[:16]
    clash = name_collision(store, name, run_id)
    if clash is not None:
        raise StoreError(
            f"--name {name!r} {'is' if clash == name else 'begins'} the id of judge run {clash}, so `--judge-run {name}` could not "
            f"tell the two apart; choose a name that does not begin an id (e.g. {name}-scores)"
        )
    earlier = store.con.execute("SELECT judge_run_id FROM judge_runs WHERE name = ?", [name]).fetchall()
    if any(r[0] == run_id for r in earlier):
        return ImportResult(run_id, name, 0, "unchanged")
    if earlier and not replace:
        raise StoreError(
            f"judge run {name!r} ({earlier[0][0]}) was imported from a different file; pass --replace to import "
            f"{scores.path} in its place, or choose another --name"
        )
    rows = pa.table(
        {
            "judge_run_id": [run_id] * len(scores.entries),
            "qid": [q for q, _, _ in scores.entries],
            "docid": [d for _, d, _ in scores.entries],
            "status": ["ok"] * len(scores.entries),
            "score": pa.array([s for _, _, s in scores.entries], pa.float64()),
            "parsed": pa.array([s for _, _, s in scores.entries], pa.float64()),
            "model_id": [name] * len(scores.entries),
        }
    )
    with store.transaction() as con:
        for (old,) in earlier:
            con.execute("DELETE FROM judgments WHERE judge_run_id = ?", [old])
            con.execute("DELETE FROM judge_runs WHERE judge_run_id = ?", [old])
        con.execute(
            "INSERT INTO judge_runs (judge_run_id, judge, config, model_id, name) VALUES (?, 'imported', ?, ?, ?)",
            [run_id, json.dumps(config, sort_keys=True), name, name],
        )
        store._insert(con, "judgments", rows)
    return ImportResult(run_id, name, len(scores.entries), "replaced" if earlier else "imported")


def of_submission(alias: str, submission_id: str | None) -> tuple[str, list[str]]:
    """The condition (and its parameters) that keeps the rows of ``alias`` whose pair was sent in the
    Batch API submission ``submission_id``; nothing when it is None."""
    if submission_id is None:
        return "", []
    sent = f"SELECT 1 FROM batch_pairs m WHERE m.submission_id = ? AND m.qid = {alias}.qid AND m.docid = {alias}.docid"
    return f" AND EXISTS ({sent})", [submission_id]


def judgment_states(store: Store, judge_run_id: str, submission_id: str | None = None) -> dict[tuple[str, str], tuple[str, int]]:
    """(qid, docid) -> (status, attempts) of every judgment recorded for the judge run; of the pairs
    of one Batch API submission when ``submission_id`` is given."""
    mine, params = of_submission("j", submission_id)
    rows = store.con.execute(
        f"SELECT qid, docid, status, attempts FROM judgments j WHERE judge_run_id = ?{mine}", [judge_run_id, *params]
    ).fetchall()
    return {(q, d): (s, a) for q, d, s, a in rows}


class JudgmentWriteError(FatalJobError):
    """Judgments of a batch that could not be stored as given. What could be kept was kept (the
    others of the batch; the failed ones as model errors with their raw answers where possible);
    the job stops, because a judge or provider is sending what qrelkit cannot store."""

    def __init__(self, message: str, statuses: list[str]):
        super().__init__(message)
        self.statuses = statuses  # of the judgments that were stored


# What a judgment judged: the input hashes of its topic and document. A row that does not carry
# them takes those loaded now (a job holds the database while it judges, and the image bytes it
# sent were checked against the loaded hash as they were read: `qrelkit.io.images`).
_INPUT_HASHES = {"content_hash": "coalesce(i.content_hash, d.content_hash)", "topic_hash": "coalesce(i.topic_hash, t.content_hash)"}


def _rows_table(judge_run_id: str, rows: list[dict[str, Any]]) -> pa.Table:
    columns = {"judge_run_id": pa.array([judge_run_id] * len(rows), pa.string())}
    for name in JUDGMENT_COLUMNS[1:]:
        columns[name] = pa.array([r.get(name) for r in rows], _TYPES.get(name, pa.string()))
    return pa.table(columns)


def _insert_table_in(con: Any, table: pa.Table, *, replace: bool = True) -> None:
    """Insert (or replace) a table of JUDGMENT_COLUMNS inside a transaction the caller holds."""
    with registered(con, "incoming_judgments", table):
        cols = ", ".join(JUDGMENT_COLUMNS)
        filled = dict(_INPUT_HASHES)
        documents = "LEFT JOIN documents d ON d.docid = i.docid "
        if table.column("content_hash").null_count == 0:
            # every row says what it judged (a job's writer): no join with a collection of millions
            # of documents at each flush (topics are few)
            filled.pop("content_hash")
            documents = ""
        values = ", ".join(filled.get(c, f"i.{c}") for c in JUDGMENT_COLUMNS)
        # A retried pair replaces its earlier (failed) judgment: one row per (run, qid, docid). A
        # plain insert, where no row replaces one, costs a third less (no lookup of each key first).
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        con.execute(
            f"{verb} INTO judgments ({cols}) SELECT {values} FROM incoming_judgments i {documents}LEFT JOIN topics t ON t.qid = i.qid"
        )


@dataclass
class JudgmentRows:
    """Judgments made ready to store: ``table`` their rows (JUDGMENT_COLUMNS, every field coerced),
    ``broken`` the judgments too broken to read, with why and their content hash (stored as model
    errors by the writer)."""

    table: pa.Table
    broken: list[tuple[Any, BaseException, str | None]]
    replaces: bool = True  # a row may replace an earlier judgment of its pair (False: none does)

    def __len__(self) -> int:
        return self.table.num_rows + len(self.broken)


def judgment_rows(
    judge_run_id: str, judgments: Sequence[Any], content_hashes: Sequence[str | None], *, replaces: bool = True
) -> JudgmentRows:
    """The rows ``judgments`` are stored as, ``content_hashes[i]`` recording which content of its
    document judgment i judged; ``replaces`` False when the caller knows no pair has a judgment
    stored yet. A batch of ordinary judgments is converted a column at a time
    (`coerce.plain_columns`); any other is coerced a row at a time, each change noted."""
    columns = plain_columns(judgments)
    if columns is not None:
        columns["content_hash"] = pa.array(content_hashes, pa.string())
        columns["topic_hash"] = pa.nulls(len(judgments), pa.string())  # the loaded topic's (`_INPUT_HASHES`)
        table = pa.table({"judge_run_id": pa.array([judge_run_id] * len(judgments), pa.string()), **columns})
        return JudgmentRows(table.select(JUDGMENT_COLUMNS), [], replaces)
    rows: list[tuple[Any, dict[str, Any]]] = []
    broken: list[tuple[Any, BaseException, str | None]] = []
    for judgment, content_hash in zip(judgments, content_hashes):
        try:
            row = judgment_row(judgment)
        except Exception as exc:  # noqa: BLE001 - a judgment object too broken to read
            broken.append((judgment, exc, content_hash))
            continue
        row["content_hash"] = content_hash
        rows.append((judgment, row))
    try:
        return JudgmentRows(_rows_table(judge_run_id, [row for _, row in rows]), broken, replaces)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        pass  # a value no column takes (a coercion bug): each row alone, the one that fails as broken
    tables = []
    for judgment, row in rows:
        try:
            tables.append(_rows_table(judge_run_id, [row]))
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            broken.append((judgment, exc, row["content_hash"]))
    return JudgmentRows(pa.concat_tables(tables) if tables else _rows_table(judge_run_id, []), broken, replaces)


def insert_judgments(
    con: Any, judge_run_id: str, judgments: list[Any], input_hashes: Mapping[tuple[str, str], tuple[str | None, str | None]] | None = None
) -> None:
    """The insert of :func:`write_judgments` (fields coerced alike) inside a transaction the caller
    holds, so that judgments and the caller's own bookkeeping (a collected batch) commit together.
    ``input_hashes``: (qid, docid) -> (topic hash, content hash) of what was sent, where that may
    not be what is loaded now (a batch sent before a reload)."""
    if not judgments:
        return
    hashes = input_hashes or {}
    rows = []
    for judgment in judgments:
        row = judgment_row(judgment)
        row["topic_hash"], row["content_hash"] = hashes.get((row["qid"], row["docid"]), (None, None))
        rows.append(row)
    _insert_table_in(con, _rows_table(judge_run_id, rows))


def _try_insert(store: Store, table: pa.Table, *, replace: bool = True) -> BaseException | None:
    """None when the rows were stored; the exception otherwise (a machine failure is raised)."""
    try:
        with store.transaction() as con:
            _insert_table_in(con, table, replace=replace)
        return None
    except StorageFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure is about these rows
        return exc


def write_judgments(store: Store, judge_run_id: str, judgments: list[Any], content_hashes: Mapping[str, str] | None = None) -> list[str]:
    """Insert or replace a batch of judgments in one transaction (Arrow bulk path); the statuses
    stored, in order. ``content_hashes`` (docid -> hash) records which content of each document was
    judged. See `write_judgment_rows`."""
    if not judgments:
        return []
    hashes = content_hashes or {}
    docids = [getattr(j, "docid", None) for j in judgments]
    judged_content = [hashes.get(docid) if isinstance(docid, str) else None for docid in docids]
    return write_judgment_rows(store, judge_run_id, [judgment_rows(judge_run_id, judgments, judged_content)])


def write_judgment_rows(store: Store, judge_run_id: str, batches: Sequence[JudgmentRows]) -> list[str]:
    """Store judgments made ready by `judgment_rows` in one transaction; the statuses stored.

    Every field is coerced to its column, so an odd value never fails the write; should a row fail
    anyway, the others are stored one by one, the failed ones as model errors keeping their raw
    answers, and JudgmentWriteError says so after they are saved."""
    tables = [batch.table for batch in batches if batch.table.num_rows]
    failed = [item for batch in batches for item in batch.broken]
    stored: list[pa.Table] = []
    if tables:
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        replace = any(batch.replaces for batch in batches)
        if _try_insert(store, table, replace=replace) is None or (not replace and _try_insert(store, table) is None):
            stored.append(table)
        else:  # keep every row that can be kept
            for index in range(table.num_rows):
                row = table.slice(index, 1)
                problem = _try_insert(store, row)
                if problem is None:
                    stored.append(row)
                else:
                    values = row.to_pylist()[0]
                    failed.append((SimpleNamespace(**values), problem, values["content_hash"]))
    statuses = [status for table in stored for status in table.column("status").to_pylist()]
    if not failed:
        return statuses
    lost = []
    for judgment, problem, content_hash in failed:
        row = fallback_row(judgment, problem)
        row["content_hash"] = content_hash
        if row["qid"] and row["docid"] and _try_insert(store, _rows_table(judge_run_id, [row])) is None:
            statuses.append(row["status"])
        else:
            lost.append(f"{row['qid'] or '?'}/{row['docid'] or '?'}")
    judgment, problem, _ = failed[0]
    first = f"{getattr(judgment, 'qid', '?')}/{getattr(judgment, 'docid', '?')}: {type(problem).__name__}: {str(problem)[:200]}"
    kept = len(failed) - len(lost)
    message = (
        f"{len(failed)} judgment(s) could not be stored as given (e.g. {first}); "
        f"{kept} kept as model errors with their raw answers" + (f", {len(lost)} lost ({', '.join(lost[:5])})" if lost else "")
    )
    raise JudgmentWriteError(message, statuses)


def ok_scores(store: Store, judge_run_id: str, column: str = "score") -> list[tuple[str, str, float]]:
    """(qid, docid, score) of the `ok` judgments with a score in ``column``."""
    if column not in SCORE_COLUMNS:
        raise StoreError(f"unknown score column {column!r}; choose one of {', '.join(SCORE_COLUMNS)}")
    return store.con.execute(
        f"SELECT qid, docid, {column} FROM judgments WHERE judge_run_id = ? AND status = 'ok' AND {column} IS NOT NULL ORDER BY qid, docid",
        [judge_run_id],
    ).fetchall()


def status_counts(store: Store, judge_run_id: str) -> dict[str, int]:
    return dict(
        store.con.execute(
            "SELECT status, count(*) FROM judgments WHERE judge_run_id = ? GROUP BY status ORDER BY status",
            [judge_run_id],
        ).fetchall()
    )


def graded_sets(store: Store, judge_run_id: str) -> list[str]:
    """The qrels sets graded from a judge run, oldest first."""
    rows = store.con.execute(
        "SELECT name FROM qrels_sets WHERE judge_run_id = ? AND origin = 'graded' ORDER BY created_at, name", [judge_run_id]
    ).fetchall()
    return [r[0] for r in rows]


def audit_qrels_name(store: Store, info: JudgeRunInfo) -> str:
    """Which qrels set `--judge-run X` means: the set X's job grades into (its `grading.name`, as
    recorded), else X's only graded set. X with several graded sets, none its job's, is refused with
    the list: which one to audit is the user's choice, never the newest by accident."""
    sets = graded_sets(store, info.judge_run_id)
    if info.qrels_set is not None and info.qrels_set in sets:
        return info.qrels_set
    if len(sets) == 1:
        return sets[0]
    if not sets:
        raise StoreError(
            f"judge run {info.judge_run_id} has no graded qrels yet; grade it first: "
            f"qrelkit grade --judge-run {info.judge_run_id} --db {store.path}"
        )
    raise StoreError(
        f"judge run {info.judge_run_id} has {len(sets)} graded qrels sets and none is its job's: {', '.join(sets)}; "
        "name one with --model-qrels NAME"
    )


def graded_qrels(store: Store, judge_run_id: str):
    """The qrels a judge run (by name, id or unique prefix) is audited by (`audit_qrels_name`), and the run."""
    info = judge_run(store, judge_run_id)
    return store.qrels(audit_qrels_name(store, info)), info


def record_job_qrels(store: Store, judge_run_id: str, name: str) -> None:
    """Remember ``name`` as the set the judge run's job grades into."""
    with store.transaction() as con:
        con.execute("UPDATE judge_runs SET qrels_set = ? WHERE judge_run_id = ?", [name, judge_run_id])


@dataclass(frozen=True)
class JudgeRunTotals:
    judgments: int
    tokens_in: int
    tokens_out: int
    cost: float | None
    mean_latency_ms: float | None


def judge_run_totals(store: Store, judge_run_id: str) -> JudgeRunTotals:
    row = store.con.execute(
        "SELECT count(*), coalesce(sum(tokens_in), 0), coalesce(sum(tokens_out), 0), sum(cost), avg(latency_ms) "
        "FROM judgments WHERE judge_run_id = ?",
        [judge_run_id],
    ).fetchone()
    assert row is not None  # an aggregate always answers one row
    total, tokens_in, tokens_out, cost, latency = row
    return JudgeRunTotals(
        int(total), int(tokens_in), int(tokens_out), None if cost is None else float(cost), None if latency is None else float(latency)
    )


class FailedJudgment(NamedTuple):
    status: str
    qid: str
    docid: str
    answer: str  # the model's raw output, whitespace-trimmed and cut at ANSWER_CHARS ("" when it gave none)
    error: str  # why it failed (the parser's or the backend's message), cut likewise


ANSWER_CHARS = 300


def failed_sample(store: Store, judge_run_id: str, *, limit: int = 10) -> list[FailedJudgment]:
    """The first failed judgments by status, qid, docid, with what the model actually answered."""
    rows = store.con.execute(
        "SELECT status, qid, docid, coalesce(raw_output, ''), coalesce(error, '') FROM judgments "
        "WHERE judge_run_id = ? AND status <> 'ok' ORDER BY status, qid, docid LIMIT ?",
        [judge_run_id, limit],
    ).fetchall()
    return [FailedJudgment(s, q, d, _cut(answer), _cut(error)) for s, q, d, answer, error in rows]


def _cut(text: str) -> str:
    text = text.strip()  # SQL's trim() strips spaces only, not the newlines models end with
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS].rstrip() + " …"


def _exported(judge_run_id: str | None, judged_at: str = "j.judged_at", *, probes: bool = False) -> tuple[str, list[str]]:
    """The query of every stored field of the judgments of one judge run (a full id), or of all: the
    judgments table's own columns, whatever the schema version adds, and the run's judge and template
    id; with ``probes`` (some run exported is a probe's), also the probe and the perturbed copy each
    judgment judged (its text, or its image file)."""
    where, params = ("WHERE j.judge_run_id = ?", [judge_run_id]) if judge_run_id is not None else ("", [])
    copies = ""
    if probes:
        copies = (
            ", r.probe->>'probe' AS probe, p.text AS perturbed_text, "
            "CASE WHEN p.image_path IS NULL THEN NULL ELSE p.image_root || '/' || p.image_path END AS perturbed_image"
        )
        where = "LEFT JOIN perturbations p ON p.judge_run_id = j.judge_run_id AND p.qid = j.qid AND p.docid = j.docid " + where
    query = (
        f"SELECT j.* REPLACE ({judged_at} AS judged_at), r.judge, r.template_id{copies} FROM judgments j JOIN judge_runs r "
        f"ON r.judge_run_id = j.judge_run_id {where} ORDER BY j.judge_run_id, j.qid, j.docid"
    )
    return query, params


def _has_probe_runs(con: Any, judge_run_id: str | None) -> bool:
    where, params = ("AND judge_run_id = ?", [judge_run_id]) if judge_run_id is not None else ("", [])
    return bool(con.execute(f"SELECT count(*) FROM judge_runs WHERE probe IS NOT NULL {where}", params).fetchall()[0][0])


def judgments_table(store: Store, judge_run_id: str | None = None) -> pa.Table:
    """Every stored field of the judgments of one judge run (a full id), or of all, as a table."""
    with store.con.cursor() as cursor:  # its own result: the store's connection may hold an unfinished one
        query, params = _exported(judge_run_id, probes=_has_probe_runs(cursor, judge_run_id))
        return cursor.sql(query, params=params).to_arrow_table()


# JSON Lines' time as Python's `isoformat` writes it (what the export wrote before it was a COPY).
ISO_TIME = (
    "strftime(j.judged_at, '%Y-%m-%dT%H:%M:%S') "
    "|| CASE WHEN epoch_us(j.judged_at) % 1000000 = 0 THEN '' ELSE strftime(j.judged_at, '.%f') END"
)


def export_judgments(
    store: Store, path: str | Path, fmt: str, judge_run_id: str | None = None, *, progress: Any = None, batch_rows: int = 50_000
) -> tuple[int, list[str]]:
    """What `judgments_table` holds, written to ``path`` without the whole table in Python memory:
    ``fmt`` "parquet" or "json" (one object a line) by DuckDB's own COPY, whose progress, polled
    from a thread twice a second, is the export's; "csv" a batch of ``batch_rows`` at a time through
    `qrelkit.io.tables.write_csv_batches` (the formula-safe quoting is ours, which COPY cannot do).
    ``progress(done, total)`` hears the rows. Returns the rows written and the judge runs they belong to."""
    from qrelkit.io.tables import write_csv_batches

    if fmt not in ("parquet", "json", "csv"):
        raise ValueError(f"judgments are exported as parquet, json or csv, not {fmt!r}")
    query, params = _exported(judge_run_id, ISO_TIME if fmt == "json" else "j.judged_at", probes=_has_probe_runs(store.con, judge_run_id))
    where, run_params = ("WHERE judge_run_id = ?", [judge_run_id]) if judge_run_id is not None else ("", [])
    with store.con.cursor() as cursor:
        cursor.execute("BEGIN TRANSACTION")  # the count and the file: one snapshot
        reader = None
        try:
            # the runs and their judgments' count in one scan: the count is the progress's total
            counted = cursor.execute(f"SELECT judge_run_id, count(*) FROM judgments {where} GROUP BY 1 ORDER BY 1", run_params).fetchall()
            runs, total = [row[0] for row in counted], sum(int(row[1]) for row in counted)
            if fmt == "csv":
                reader = cursor.sql(query, params=params).to_arrow_reader(batch_rows)
                rows = write_csv_batches(reader, path, progress=None if progress is None else lambda done: progress(done, total))
            else:
                target = str(path).replace("'", "''")
                # USE_TMP_FILE false: DuckDB would write a visible `tmp_<name>` beside the (hidden) temporary
                # it is given, which a kill leaves behind; that temporary is already the atomic step
                copy = f"COPY ({query}) TO '{target}' (FORMAT {fmt}, USE_TMP_FILE false)"
                written = cursor.execute(copy, params).fetchone() if progress is None else _watched(cursor, copy, params, progress, total)
                rows = int(written[0]) if written else 0
        finally:
            if reader is not None:
                reader.close()  # a write that failed midway (a full disk) leaves the result open: DuckDB runs nothing else before
            cursor.execute("COMMIT")
    return rows, runs


def _watched(cursor: Any, statement: str, params: list[Any], progress: Any, total: int) -> Any:
    """``statement``'s one result row, run in a thread while this one reports ``progress(done, total)``
    from DuckDB's `query_progress` (a percentage of the plan's work; -1 before it knows)."""
    import threading

    cursor.execute("SET enable_progress_bar = true")  # DuckDB counts progress only with its bar on
    cursor.execute("SET enable_progress_bar_print = false")  # ... and prints none of its own
    answer: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            answer.append(cursor.execute(statement, params).fetchone())
        except BaseException as error:  # handed to the caller's thread below
            failed.append(error)

    worker = threading.Thread(target=run, name="qrelkit-export", daemon=True)
    worker.start()
    progress(0, total)
    while worker.is_alive():
        worker.join(0.5)
        share = cursor.query_progress()
        if worker.is_alive() and share >= 0:
            progress(min(total, int(total * share / 100.0)), total)
    if failed:
        raise failed[0]
    progress(total, total)
    return answer[0]


def judging_span_seconds(store: Store, judge_run_id: str) -> float | None:
    """Seconds from the first judgment of a judge run written to the last (None with fewer than two):
    its judging time as the database saw it, pauses between resumed runs included."""
    row = store.con.execute(
        "SELECT count(*), (epoch_ms(max(judged_at)) - epoch_ms(min(judged_at))) / 1000.0 FROM judgments WHERE judge_run_id = ?",
        [judge_run_id],
    ).fetchone()
    assert row is not None  # an aggregate always answers one row
    return None if row[0] < 2 or row[1] is None else float(row[1])


def judgment_outcomes(store: Store, judge_run_id: str) -> pa.Table:
    """The judge run's judgments as (qid, docid, status, score) columns: what a running job's partial
    audit starts from (`qrelkit.jobs.watch`)."""
    query = "SELECT qid, docid, status, score FROM judgments WHERE judge_run_id = ? ORDER BY qid, docid"
    with store.con.cursor() as cursor:  # its own: a pending-pairs query may hold the store's connection
        return cursor.sql(query, params=[judge_run_id]).to_arrow_table()


def judging_rate(store: Store, judge_run_id: str, *, max_gap_seconds: float = 60.0) -> tuple[int, float] | None:
    """(pairs, seconds) of a judge run's judging as its flushes saw it: each flush's judgments (one
    `judged_at` per flush) over the time since the flush before it. The first flush of each sitting
    (none in the ``max_gap_seconds`` before it: a run's start, a resumed run) is left out, as the time
    before it went to loading, not judging. None without two flushes in a row."""
    row = store.con.execute(
        "WITH flushes AS (SELECT judged_at, count(*) AS n FROM judgments WHERE judge_run_id = ? GROUP BY judged_at), "
        "gaps AS (SELECT n, (epoch_ms(judged_at) - epoch_ms(lag(judged_at) OVER (ORDER BY judged_at))) / 1000.0 AS gap FROM flushes) "
        "SELECT sum(n), sum(gap) FROM gaps WHERE gap > 0 AND gap <= ?",
        [judge_run_id, max_gap_seconds],
    ).fetchone()
    if row is None or not row[0] or not row[1]:
        return None
    return int(row[0]), float(row[1])


def judge_run_ids(store: Store) -> list[str]:
    """Every judge run's id, oldest first."""
    return [row[0] for row in store.con.execute("SELECT judge_run_id FROM judge_runs ORDER BY created_at").fetchall()]
