"""Writes v5.duckdb.gz and expected.json with the previous release's code (schema version 5,
before the compact entry tables of migration 6), for tests/test_store_migration.py.

Run it with that release on the path, from this folder, e.g.:

    git archive f6b09b4 qrelkit | tar -x -C /tmp/qrelkit-v5
    PYTHONPATH=/tmp/qrelkit-v5 python make_fixture.py

What it wrote is what the previous release read back: the migrated database must read back the same.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import qrelkit
from qrelkit.evaluate.metrics import evaluate_runs
from qrelkit.io import Qrels
from qrelkit.judges.base import Judgment
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

HERE = Path(__file__).parent
MEASURES = ["nDCG@10", "AP(rel=2)", "P@2", "RR"]


def main() -> None:
    db = Path("/tmp/qrelkit-v5-fixture.duckdb")
    db.unlink(missing_ok=True)
    with Store(db) as store:
        assert store.schema_version() == 5, f"run with the release before migration 6 ({qrelkit.__file__})"
        store.load_topics(HERE / "topics.tsv")
        store.load_run(HERE / "bm25.run")
        store.load_run(HERE / "dense.run", group="neural")
        store.load_qrels(HERE / "human.qrels")
        info = JudgeRunInfo("jr0001", "fixture", {"model": "none"}, None, None, None, None)
        ensure_judge_run(store, info)
        judgments = [
            Judgment("q1", "d1", "ok", score=2.0, parsed=2.0, expected=1.75),
            Judgment("q1", "d4", "ok", score=1.0, parsed=1.0, expected=1.25),
            Judgment("q2", "d6", "parse_error", raw_output="maybe?", error="no grade in the answer"),
        ]
        write_judgments(store, "jr0001", judgments)
        store.save_qrels(
            Qrels.from_table("model", store.qrels("human").table.slice(0, 3)),
            judge_run_id="jr0001",
            grading={"method": "threshold", "score": "score"},
        )
        runs = store.runs()
        expected = {
            "schema_version": store.schema_version(),
            "runs": {r.name: {"tag": r.tag, "rows": r.table.to_pylist()} for r in runs},
            "run_groups": store.run_groups(),
            "qrels": {name: store.qrels(name).table.to_pylist() for name in store.qrels_names()},
            "judgments": [
                list(row)
                for row in store.con.execute(
                    "SELECT qid, docid, status, score, parsed, expected, raw_output FROM judgments ORDER BY qid, docid"
                ).fetchall()
            ],
            "evaluation": evaluate_runs(store.qrels("human"), runs, MEASURES).to_dict(per_query=True),
            "summary": [list(line) for line in store.summary()],
        }
    with db.open("rb") as source, gzip.open(HERE / "v5.duckdb.gz", "wb", compresslevel=9) as target:
        shutil.copyfileobj(source, target)
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True, default=str) + "\n")
    db.unlink()


if __name__ == "__main__":
    main()
