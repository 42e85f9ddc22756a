"""Image-text pools work as text pools do: a CLIPScore judge run (the tiny open_clip model the CLIP
tests build, random weights) graded into qrels, a plan whose file shows each pair's image, the
human grades loaded, and estimates that equal the human measures when every pair is labelled."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

pytest.importorskip("torch", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
pytest.importorskip("open_clip", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
from conftest import tiny_open_clip  # noqa: E402
from hostile import qrelkit as cli  # noqa: E402
from PIL import Image  # noqa: E402

TOPICS = {"t1": "goldfish in a pond", "t2": "the eiffel tower", "t3": "a golden bridge"}
IMAGES = [f"img{i}" for i in range(6)]


@pytest.fixture(scope="module")
def image_track(tmp_path_factory):
    folder = tmp_path_factory.mktemp("images")
    root = folder / "images"
    root.mkdir()
    rng = np.random.default_rng(3)
    for name in IMAGES:
        Image.fromarray(rng.integers(0, 255, (32, 40, 3), dtype=np.uint8)).save(root / f"{name}.png")
    checkpoint = tiny_open_clip(folder, "TinyClipEstimate", embed_dim=32)
    options = {
        "model": "TinyClipEstimate",
        "checkpoint": str(checkpoint),
        "model_config_file": str(folder / "TinyClipEstimate.json"),
        "device": "cpu",
    }
    (folder / "topics.jsonl").write_text("".join(json.dumps({"qid": q, "text": t}) + "\n" for q, t in TOPICS.items()))
    (folder / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"{d}.png"}) + "\n" for d in IMAGES))
    (folder / "pairs.tsv").write_text("".join(f"{q}\t{d}\n" for q in TOPICS for d in IMAGES))
    job = {
        "database": "images.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": str(root)},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "clipscore", "options": options},
        "grading": {"method": "quantile", "quantiles": [0.5, 0.75], "labels": [0, 1, 2], "name": "clip-graded"},
    }
    (folder / "job.yaml").write_text(yaml.safe_dump(job))
    done = cli("judge", folder / "job.yaml", cwd=folder)
    assert done.returncode == 0, done.stderr
    human = "".join(f"{q} 0 {d} {int(rng.integers(0, 3))}\n" for q in TOPICS for d in IMAGES)
    (folder / "human.qrels").write_text(human)
    runs = folder / "runs"
    runs.mkdir()
    for r in range(3):
        order = [IMAGES[i] for i in np.random.default_rng(r).permutation(len(IMAGES))]
        (runs / f"r{r}.run").write_text("".join(f"{q} Q0 {d} {k} {10 - k} r{r}\n" for q in TOPICS for k, d in enumerate(order, start=1)))
    return folder


def test_a_clipscore_judge_run_plans_loads_and_estimates_like_a_text_pool(image_track, tmp_path):
    db = image_track / "images.duckdb"
    pool = len(TOPICS) * len(IMAGES)
    done = cli("assess", "plan", "--judge-qrels", "clip-graded", "--runs", image_track / "runs", "--budget", pool, "--scale", "0-2",
               "--db", db, "--out", tmp_path / "pairs.tsv")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in (tmp_path / "pairs.tsv").read_text().splitlines()[1:]]
    assert len(rows) == pool
    assert all(row[5] == TOPICS[row[0]] and row[6].endswith(f"{row[1]}.png") for row in rows)  # the query and the image to look at
    grades = {(line.split()[0], line.split()[2]): line.split()[3] for line in (image_track / "human.qrels").read_text().splitlines()}
    returned = tmp_path / "returned.qrels"
    returned.write_text("".join(f"{q} 0 {d} {grades[(q, d)]}\n" for q, d, *_ in rows))
    assert cli("assess", "load", returned, "--db", db).returncode == 0
    done = cli("estimate", "--db", db, "--judge-qrels", "clip-graded", "--runs", image_track / "runs", "--measure", "nDCG@5", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["runs"]
    reference = cli("evaluate", "--qrels", image_track / "human.qrels", "--runs", image_track / "runs", "--measure", "nDCG@5", "--json")
    expected = json.loads(reference.stdout)["runs"]
    for run, entry in found.items():
        assert entry["estimate"] == pytest.approx(expected[run]["nDCG@5"], abs=1e-9)


def test_a_judge_run_of_the_database_stands_for_its_graded_qrels(image_track, tmp_path):
    import duckdb

    db = image_track / "images.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        (run_id,) = con.execute("SELECT judge_run_id FROM judge_runs").fetchone()
    given = ["--runs", image_track / "runs", "--budget", 6, "--scale", "0-2", "--design", "weighted", "--db", db, "--json"]
    by_set = cli("assess", "plan", "--judge-qrels", "clip-graded", "--name", "by-set", *given)
    by_run = cli("assess", "plan", "--judge-qrels", run_id, "--name", "by-run", *given)
    assert by_set.returncode == 0 and by_run.returncode == 0, by_run.stderr
    assert json.loads(by_run.stdout)["design"]["judge"]["name"] == "clip-graded"
    assert json.loads(by_run.stdout)["design"]["planned_pairs"] == json.loads(by_set.stdout)["design"]["planned_pairs"]
