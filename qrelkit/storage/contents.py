"""What a database holds, as data (`qrelkit show --json`, `qrelkit.Store(db).contents()`): its
topics and documents counted, and each run, qrels set and judge run with its stored fields."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qrelkit.storage.store import Store


def _rows(store: Store, sql: str) -> list[dict[str, Any]]:
    cursor = store.con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def contents(store: Store) -> dict[str, Any]:
    """{"database", "schema_version", "topics", "documents", "runs", "qrels_sets", "judge_runs", "embeddings"}."""
    count = store._scalar
    runs = _rows(store, "SELECT name, tag, path, file_hash, n_entries AS entries FROM runs ORDER BY name")
    qrels_sets = _rows(
        store,
        "SELECT s.name, s.origin, count(q.qid_id) AS judgments, s.path, s.file_hash, s.judge_run_id, s.grading "
        "FROM qrels_sets s LEFT JOIN qrels q USING (qrels_set_id) GROUP BY ALL ORDER BY s.name",
    )
    for qrels_set in qrels_sets:
        qrels_set["grading"] = _json(qrels_set["grading"])
    judge_runs = _rows(
        store,
        "SELECT judge_run_id, name, judge, model_id, template_id, template_hash, config, sample, qrels_set, probe, created_at "
        "FROM judge_runs ORDER BY created_at, judge_run_id",
    )
    statuses: dict[str, dict[str, int]] = {}
    for judge_run_id, status, n in store.con.execute(
        "SELECT judge_run_id, status, count(*) FROM judgments GROUP BY ALL ORDER BY judge_run_id, status"
    ).fetchall():
        statuses.setdefault(judge_run_id, {})[status] = int(n)
    for judge_run in judge_runs:
        judge_run["config"], judge_run["sample"] = _json(judge_run["config"]), _json(judge_run["sample"])
        judge_run["probe"] = _json(judge_run["probe"])  # a probe's run: the probe and the run it perturbs (docs/probes.md)
        judge_run["created_at"] = None if judge_run["created_at"] is None else str(judge_run["created_at"])
        judge_run["statuses"] = statuses.get(judge_run["judge_run_id"], {})
        judge_run["judgments"] = sum(judge_run["statuses"].values())
    return {
        "database": str(store.path),
        "schema_version": store.schema_version(),
        "topics": count("SELECT count(*) FROM topics"),
        "documents": {
            "count": count("SELECT count(*) FROM documents"),
            "images": count("SELECT count(*) FROM documents WHERE image_path IS NOT NULL"),
        },
        "runs": runs,
        "qrels_sets": qrels_sets,
        "judge_runs": judge_runs,
        "embeddings": count("SELECT count(*) FROM embeddings"),
    }
