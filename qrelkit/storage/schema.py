"""The DuckDB schema and its forward migrations.

Each migration is applied once, in order, inside a transaction, and bumps
``meta.schema_version``; a database written by a newer qrelkit is refused, not guessed at.
"""

from __future__ import annotations

MIGRATIONS: list[list[str]] = [
    # 1: the collection, runs, qrels, judging and embeddings.
    [
        """CREATE TABLE loads (
            kind TEXT NOT NULL, name TEXT NOT NULL, path TEXT, file_hash TEXT NOT NULL,
            n_rows BIGINT NOT NULL, loaded_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (kind, name))""",
        """CREATE TABLE topics (
            qid TEXT PRIMARY KEY, text TEXT NOT NULL, fields JSON, source TEXT NOT NULL)""",
        """CREATE TABLE documents (
            docid TEXT PRIMARY KEY, text TEXT, image_path TEXT, image_root TEXT,
            content_hash TEXT NOT NULL, fields JSON, source TEXT NOT NULL)""",
        """CREATE TABLE runs (
            name TEXT PRIMARY KEY, run_group TEXT, tag TEXT, path TEXT, file_hash TEXT NOT NULL,
            n_entries BIGINT NOT NULL, loaded_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""",
        """CREATE TABLE run_entries (
            run TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, rank INTEGER NOT NULL,
            score DOUBLE NOT NULL, PRIMARY KEY (run, qid, docid))""",
        """CREATE TABLE qrels_sets (
            name TEXT PRIMARY KEY, origin TEXT NOT NULL, judge_run_id TEXT, grading JSON,
            path TEXT, file_hash TEXT, created_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""",
        """CREATE TABLE qrels (
            qrels_set TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, grade INTEGER NOT NULL,
            iteration TEXT NOT NULL DEFAULT '0', PRIMARY KEY (qrels_set, qid, docid))""",
        """CREATE TABLE judge_runs (
            judge_run_id TEXT PRIMARY KEY, judge TEXT NOT NULL, config JSON NOT NULL,
            template_id TEXT, template_hash TEXT, template JSON, model_id TEXT,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""",
        """CREATE TABLE judgments (
            judge_run_id TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('ok', 'parse_error', 'model_error', 'input_error')),
            score DOUBLE, score_expected DOUBLE, raw_output TEXT, error TEXT,
            tokens_in INTEGER, tokens_out INTEGER, latency_ms DOUBLE, cost DOUBLE,
            attempts INTEGER NOT NULL DEFAULT 1, model_id TEXT, system_fingerprint TEXT,
            judged_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (judge_run_id, qid, docid))""",
        """CREATE TABLE embeddings (
            embedder_id TEXT NOT NULL, item_kind TEXT NOT NULL, item_id TEXT NOT NULL,
            content_hash TEXT NOT NULL, vector FLOAT[] NOT NULL,
            PRIMARY KEY (embedder_id, item_kind, item_id, content_hash))""",
    ],
]

MIGRATIONS.append(
    # 2: one name for the expected grade everywhere (option, column, `--score` value), and the
    # parsed grade kept beside the judgment's score whichever of the two the judge scores by.
    [
        "ALTER TABLE judgments RENAME COLUMN score_expected TO expected",
        "ALTER TABLE judgments ADD COLUMN parsed DOUBLE",
    ]
)

MIGRATIONS.append(
    # 3: every qrels set records its origin, `loaded` (a file and its hash) or `graded` (a judge run
    # and its grading record); a judge run may carry a name (imported scores are named by the user).
    [
        "UPDATE qrels_sets SET origin = 'loaded' WHERE origin = 'file'",
        "ALTER TABLE judge_runs ADD COLUMN name TEXT",
    ]
)

MIGRATIONS.append(
    # 4: Batch API submissions of a judge run (docs/openai-batch.md). A submission is recorded with
    # its pairs before its file is uploaded, its file id before the batch is created, and its batch
    # id as soon as the API returns it; `state` says how far it got (prepared, uploaded, submitted,
    # collected), `status` and the counts are the API's. `options` are the judge's options when it
    # was submitted (how to reach and price it; never a key).
    [
        """CREATE TABLE batch_submissions (
            submission_id TEXT PRIMARY KEY, judge_run_id TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('prepared', 'uploaded', 'submitted', 'collected')),
            file_name TEXT NOT NULL, request_file TEXT, requests INTEGER NOT NULL, bytes BIGINT NOT NULL,
            options JSON NOT NULL, input_file_id TEXT, batch_id TEXT, status TEXT,
            total INTEGER, completed INTEGER, failed INTEGER, output_file_id TEXT, error_file_id TEXT, errors TEXT,
            judged INTEGER, resubmitted INTEGER, created_unix BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp, checked_at TIMESTAMP, collected_at TIMESTAMP)""",
        """CREATE TABLE batch_pairs (
            submission_id TEXT NOT NULL, judge_run_id TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
            outcome TEXT CHECK (outcome IN ('judged', 'resubmit')),
            PRIMARY KEY (submission_id, qid, docid))""",
    ]
)

MIGRATIONS.append(
    # 5: a judgment records which content of its document it judged (the document's content hash),
    # and notes on fields that were coerced or dropped to store it. A document whose content
    # changes has its judgments moved to `judgment_history`: kept, never used for the new content.
    # Judgments made before this version are taken to have judged the content loaded now.
    [
        "ALTER TABLE judgments ADD COLUMN content_hash TEXT",
        "ALTER TABLE judgments ADD COLUMN notes TEXT",
        "UPDATE judgments SET content_hash = d.content_hash FROM documents d WHERE d.docid = judgments.docid",
        """CREATE TABLE judgment_history (
            judge_run_id TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, status TEXT NOT NULL,
            score DOUBLE, parsed DOUBLE, expected DOUBLE, raw_output TEXT, error TEXT,
            tokens_in INTEGER, tokens_out INTEGER, latency_ms DOUBLE, cost DOUBLE, attempts INTEGER,
            model_id TEXT, system_fingerprint TEXT, judged_at TIMESTAMP, content_hash TEXT, notes TEXT,
            retired_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""",
    ]
)

MIGRATIONS.append(
    # 6: run entries and qrels at TREC scale. qids, docids, runs and qrels sets become integer ids
    # (`qids`, `docids`: lookup tables, ids handed out in order of first load; `runs.run_id`,
    # `qrels_sets.qrels_set_id`), scores FLOAT (the float32 convention runs are evaluated with; the
    # loader already kept them at float32) and ranks INTEGER. The entry tables carry no index: a
    # three-column key index cost more than the rows (disk and load time), and the loader keeps
    # (run, qid, docid) unique itself. Lookup ids are dense and only grow; a lookup row no entry
    # uses any more (a replaced run's) stays, unused and harmless.
    [
        "CREATE TABLE qids (qid_id INTEGER NOT NULL, qid TEXT NOT NULL)",
        "CREATE TABLE docids (docid_id INTEGER NOT NULL, docid TEXT NOT NULL)",
        "INSERT INTO qids SELECT row_number() OVER (ORDER BY qid), qid FROM (SELECT qid FROM run_entries UNION SELECT qid FROM qrels)",
        "INSERT INTO docids SELECT row_number() OVER (ORDER BY docid), docid "
        "FROM (SELECT docid FROM run_entries UNION SELECT docid FROM qrels)",
        "ALTER TABLE runs ADD COLUMN run_id INTEGER",
        "UPDATE runs SET run_id = n.id FROM (SELECT name, row_number() OVER (ORDER BY name) AS id FROM runs) n WHERE runs.name = n.name",
        "ALTER TABLE qrels_sets ADD COLUMN qrels_set_id INTEGER",
        "UPDATE qrels_sets SET qrels_set_id = n.id FROM (SELECT name, row_number() OVER (ORDER BY name) AS id FROM qrels_sets) n "
        "WHERE qrels_sets.name = n.name",
        """CREATE TABLE compact_run_entries (
            run_id INTEGER NOT NULL, qid_id INTEGER NOT NULL, docid_id INTEGER NOT NULL, rank INTEGER NOT NULL, score FLOAT NOT NULL)""",
        "INSERT INTO compact_run_entries SELECT r.run_id, q.qid_id, d.docid_id, e.rank, e.score::FLOAT FROM run_entries e "
        "JOIN runs r ON r.name = e.run JOIN qids q ON q.qid = e.qid JOIN docids d ON d.docid = e.docid ORDER BY r.run_id, q.qid_id",
        "DROP TABLE run_entries",
        "ALTER TABLE compact_run_entries RENAME TO run_entries",
        """CREATE TABLE compact_qrels (
            qrels_set_id INTEGER NOT NULL, qid_id INTEGER NOT NULL, docid_id INTEGER NOT NULL, grade INTEGER NOT NULL,
            iteration TEXT NOT NULL DEFAULT '0')""",
        "INSERT INTO compact_qrels SELECT s.qrels_set_id, q.qid_id, d.docid_id, e.grade, e.iteration FROM qrels e "
        "JOIN qrels_sets s ON s.name = e.qrels_set JOIN qids q ON q.qid = e.qid JOIN docids d ON d.docid = e.docid "
        "ORDER BY s.qrels_set_id, q.qid_id",
        "DROP TABLE qrels",
        "ALTER TABLE compact_qrels RENAME TO qrels",
    ]
)

MIGRATIONS.append(
    # 7: which qrels an audit of a judge run reads, and what it covers. `qrels_set` is the set the
    # judge run's job grades into (its `grading.name`), recorded when the job grades, so that
    # `--judge-run X` finds it again among other sets graded from X. `sample` describes a job run
    # on a sample of its pool (`judge --sample N --seed S`: pairs, seed, topics, and the pool's
    # size); NULL when the job ran on its whole pool. Runs made before this version have neither:
    # an audit then takes their only graded set, or asks which. Quantile grading records name their
    # tie rule (`midrank` or `at-or-above`); those that described the mid-rank rule in a sentence
    # are given its name (the oldest records name none: their rule is not known).
    [
        "ALTER TABLE judge_runs ADD COLUMN qrels_set TEXT",
        "ALTER TABLE judge_runs ADD COLUMN sample JSON",
        """UPDATE qrels_sets SET grading = json_merge_patch(grading, '{"ties": "midrank"}')
           WHERE starts_with(grading->>'ties', 'mid-rank')""",
    ]
)

MIGRATIONS.append(
    # 8: a judgment knows its inputs. A topic records the hash of what a template can read of it
    # (its text and fields), a document the hash of its text or image bytes *and* its fields
    # (`qrelkit.io.collection.with_fields`, computed alike here), and its image's own hash beside it
    # (what the bytes read for judging must match). A judgment records both hashes of what it
    # judged, so a topic or document that changes is judged again; a Batch API pair records them
    # when it is sent (its answer may be collected after a reload). Judgments made before this
    # version are taken to have judged the topics and fields loaded now.
    [
        "ALTER TABLE topics ADD COLUMN content_hash TEXT",
        "UPDATE topics SET content_hash = sha256(text)",
        "UPDATE topics SET content_hash = sha256(content_hash || chr(0) || CAST(fields AS TEXT)) WHERE CAST(fields AS TEXT) <> '{}'",
        "ALTER TABLE documents ADD COLUMN image_sha256 TEXT",
        "UPDATE documents SET image_sha256 = content_hash WHERE image_path IS NOT NULL",
        "UPDATE judgments SET content_hash = sha256(d.content_hash || chr(0) || CAST(d.fields AS TEXT)) "
        "FROM documents d WHERE d.docid = judgments.docid AND d.content_hash = judgments.content_hash AND CAST(d.fields AS TEXT) <> '{}'",
        "UPDATE documents SET content_hash = sha256(content_hash || chr(0) || CAST(fields AS TEXT)) WHERE CAST(fields AS TEXT) <> '{}'",
        "ALTER TABLE judgments ADD COLUMN topic_hash TEXT",
        "UPDATE judgments SET topic_hash = t.content_hash FROM topics t WHERE t.qid = judgments.qid AND judgments.content_hash IS NOT NULL",
        "ALTER TABLE judgment_history ADD COLUMN topic_hash TEXT",
        "ALTER TABLE batch_pairs ADD COLUMN topic_hash TEXT",
        "ALTER TABLE batch_pairs ADD COLUMN content_hash TEXT",
        "UPDATE batch_pairs SET topic_hash = t.content_hash FROM topics t WHERE t.qid = batch_pairs.qid",
        "UPDATE batch_pairs SET content_hash = d.content_hash FROM documents d WHERE d.docid = batch_pairs.docid",
    ]
)

MIGRATIONS.append(
    # 9: gullibility probes (docs/probes.md). A probe's judge run records its probe (id, perturbation,
    # parameters, seed) and the judge run whose documents it perturbs (`probe`, NULL for any other
    # run). `perturbations` holds each pair's perturbed copy as that run judged it: its text, or its
    # image file (under `image_root`, beside the database) with the file's hash; the hash of the copy
    # with the document's fields (`content_hash`, what the pair's judgment records); the hash of the
    # document it was made from (`source_hash`: a document that changes makes both stale); or why no
    # copy could be made (`error`: the pair is an input error).
    [
        "ALTER TABLE judge_runs ADD COLUMN probe JSON",
        """CREATE TABLE perturbations (
            judge_run_id TEXT NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL, source_hash TEXT NOT NULL,
            content_hash TEXT NOT NULL, text TEXT, image_path TEXT, image_root TEXT, image_sha256 TEXT, error TEXT,
            PRIMARY KEY (judge_run_id, qid, docid))""",
    ]
)

MIGRATIONS.append(
    # 10: designed human samples (docs/human-budget.md). `designs` records what a sample was planned
    # from and how: its design (queries, stratified or weighted), the measure it weighs, the seed, the
    # grade scale the humans use, the judge's labels (source and hash) and the runs, the pool (how many
    # pairs and their hash, to refuse estimating over another pool) and, once loaded, the qrels set of
    # the human labels (`human_set`). `design_phases` holds its phases (the plan, then each `--next`),
    # each with its budget; `design_pairs` every planned pair with its phase, its stratum (the query's
    # position, or -1 for a pair drawn on its own), its stratum's pool size and its inclusion probability.
    [
        """CREATE TABLE designs (
            name TEXT PRIMARY KEY, kind TEXT NOT NULL, measure TEXT NOT NULL, seed BIGINT NOT NULL,
            scale_low INTEGER NOT NULL, scale_high INTEGER NOT NULL, judge JSON NOT NULL, runs JSON NOT NULL,
            pool_pairs INTEGER NOT NULL, pool_hash TEXT NOT NULL, depth INTEGER, human_set TEXT,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp)""",
        """CREATE TABLE design_phases (
            design TEXT NOT NULL, phase INTEGER NOT NULL, kind TEXT NOT NULL, budget INTEGER NOT NULL, params JSON,
            created_at TIMESTAMP NOT NULL DEFAULT current_timestamp, PRIMARY KEY (design, phase))""",
        """CREATE TABLE design_pairs (
            design TEXT NOT NULL, phase INTEGER NOT NULL, qid TEXT NOT NULL, docid TEXT NOT NULL,
            stratum INTEGER NOT NULL, stratum_size INTEGER NOT NULL, inclusion DOUBLE NOT NULL,
            PRIMARY KEY (design, qid, docid))""",
    ]
)

SCHEMA_VERSION = len(MIGRATIONS)

# The tables of the current schema version as `qrelkit.storage.catalog` reads them from a file's
# catalog: what opening a database checks (a test checks this against the migrations above).
CURRENT_TABLES: dict[str, tuple[str, ...]] = {
    "batch_pairs": (
        "submission_id VARCHAR",
        "judge_run_id VARCHAR",
        "qid VARCHAR",
        "docid VARCHAR",
        "outcome VARCHAR",
        "topic_hash VARCHAR",
        "content_hash VARCHAR",
    ),
    "batch_submissions": (
        "submission_id VARCHAR",
        "judge_run_id VARCHAR",
        "state VARCHAR",
        "file_name VARCHAR",
        "request_file VARCHAR",
        "requests INTEGER",
        "bytes BIGINT",
        "options JSON",
        "input_file_id VARCHAR",
        "batch_id VARCHAR",
        "status VARCHAR",
        "total INTEGER",
        "completed INTEGER",
        "failed INTEGER",
        "output_file_id VARCHAR",
        "error_file_id VARCHAR",
        "errors VARCHAR",
        "judged INTEGER",
        "resubmitted INTEGER",
        "created_unix BIGINT",
        "created_at TIMESTAMP DEFAULT current_timestamp",
        "checked_at TIMESTAMP",
        "collected_at TIMESTAMP",
    ),
    "design_pairs": (
        "design VARCHAR",
        "phase INTEGER",
        "qid VARCHAR",
        "docid VARCHAR",
        "stratum INTEGER",
        "stratum_size INTEGER",
        "inclusion DOUBLE",
    ),
    "design_phases": (
        "design VARCHAR",
        "phase INTEGER",
        "kind VARCHAR",
        "budget INTEGER",
        "params JSON",
        "created_at TIMESTAMP DEFAULT current_timestamp",
    ),
    "designs": (
        "name VARCHAR",
        "kind VARCHAR",
        "measure VARCHAR",
        "seed BIGINT",
        "scale_low INTEGER",
        "scale_high INTEGER",
        "judge JSON",
        "runs JSON",
        "pool_pairs INTEGER",
        "pool_hash VARCHAR",
        "depth INTEGER",
        "human_set VARCHAR",
        "created_at TIMESTAMP DEFAULT current_timestamp",
    ),
    "docids": ("docid_id INTEGER", "docid VARCHAR"),
    "documents": (
        "docid VARCHAR",
        "text VARCHAR",
        "image_path VARCHAR",
        "image_root VARCHAR",
        "content_hash VARCHAR",
        "fields JSON",
        "source VARCHAR",
        "image_sha256 VARCHAR",
    ),
    "embeddings": ("embedder_id VARCHAR", "item_kind VARCHAR", "item_id VARCHAR", "content_hash VARCHAR", "vector FLOAT[]"),
    "judge_runs": (
        "judge_run_id VARCHAR",
        "judge VARCHAR",
        "config JSON",
        "template_id VARCHAR",
        "template_hash VARCHAR",
        "template JSON",
        "model_id VARCHAR",
        "created_at TIMESTAMP DEFAULT current_timestamp",
        "name VARCHAR",
        "qrels_set VARCHAR",
        "sample JSON",
        "probe JSON",
    ),
    "judgment_history": (
        "judge_run_id VARCHAR",
        "qid VARCHAR",
        "docid VARCHAR",
        "status VARCHAR",
        "score DOUBLE",
        "parsed DOUBLE",
        "expected DOUBLE",
        "raw_output VARCHAR",
        "error VARCHAR",
        "tokens_in INTEGER",
        "tokens_out INTEGER",
        "latency_ms DOUBLE",
        "cost DOUBLE",
        "attempts INTEGER",
        "model_id VARCHAR",
        "system_fingerprint VARCHAR",
        "judged_at TIMESTAMP",
        "content_hash VARCHAR",
        "notes VARCHAR",
        "retired_at TIMESTAMP DEFAULT current_timestamp",
        "topic_hash VARCHAR",
    ),
    "judgments": (
        "judge_run_id VARCHAR",
        "qid VARCHAR",
        "docid VARCHAR",
        "status VARCHAR",
        "score DOUBLE",
        "expected DOUBLE",
        "raw_output VARCHAR",
        "error VARCHAR",
        "tokens_in INTEGER",
        "tokens_out INTEGER",
        "latency_ms DOUBLE",
        "cost DOUBLE",
        "attempts INTEGER DEFAULT 1",
        "model_id VARCHAR",
        "system_fingerprint VARCHAR",
        "judged_at TIMESTAMP DEFAULT current_timestamp",
        "parsed DOUBLE",
        "content_hash VARCHAR",
        "notes VARCHAR",
        "topic_hash VARCHAR",
    ),
    "loads": (
        "kind VARCHAR",
        "name VARCHAR",
        "path VARCHAR",
        "file_hash VARCHAR",
        "n_rows BIGINT",
        "loaded_at TIMESTAMP DEFAULT current_timestamp",
    ),
    "meta": ("key VARCHAR", "value VARCHAR"),
    "perturbations": (
        "judge_run_id VARCHAR",
        "qid VARCHAR",
        "docid VARCHAR",
        "source_hash VARCHAR",
        "content_hash VARCHAR",
        "text VARCHAR",
        "image_path VARCHAR",
        "image_root VARCHAR",
        "image_sha256 VARCHAR",
        "error VARCHAR",
    ),
    "qids": ("qid_id INTEGER", "qid VARCHAR"),
    "qrels": ("qrels_set_id INTEGER", "qid_id INTEGER", "docid_id INTEGER", "grade INTEGER", "iteration VARCHAR DEFAULT '0'"),
    "qrels_sets": (
        "name VARCHAR",
        "origin VARCHAR",
        "judge_run_id VARCHAR",
        "grading JSON",
        "path VARCHAR",
        "file_hash VARCHAR",
        "created_at TIMESTAMP DEFAULT current_timestamp",
        "qrels_set_id INTEGER",
    ),
    "run_entries": ("run_id INTEGER", "qid_id INTEGER", "docid_id INTEGER", "rank INTEGER", "score FLOAT"),
    "runs": (
        "name VARCHAR",
        "run_group VARCHAR",
        "tag VARCHAR",
        "path VARCHAR",
        "file_hash VARCHAR",
        "n_entries BIGINT",
        "loaded_at TIMESTAMP DEFAULT current_timestamp",
        "run_id INTEGER",
    ),
    "topics": ("qid VARCHAR", "text VARCHAR", "fields JSON", "source VARCHAR", "content_hash VARCHAR"),
}
