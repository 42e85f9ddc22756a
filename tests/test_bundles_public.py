"""Each bundle fetched from a local mirror served on 127.0.0.1, checksums and all. The mirror is
built at test time from the public repositories' snapshots and ../shared/data (bundle_mirror.py);
what no public source here can stand for (NIST's login-only runs, AToMiC's files) is stood in for
by small files, which the fetch must call unverified. Skipped, naming what is absent, elsewhere."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bundle_mirror import dl19_mirror, github_sources, place, serve
from conftest import SHARED_DATA

from qrelkit.io.bundles import load_bundle

ROOT = Path(__file__).resolve().parents[1]


def fetch(name: str, data: Path, mirror: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "QRELKIT_DATA"}
    return subprocess.run(
        [sys.executable, "-m", "qrelkit.cli", "data", "fetch", name, "--to", str(data), "--mirror", mirror, *extra],
        capture_output=True, text=True, env=env,
    )  # fmt: skip


@pytest.fixture()
def dl19_shared() -> Path:
    folder = SHARED_DATA / "trec-dl-2019"
    if not (folder / "umbrela-gpt4o.qrels").is_file():
        pytest.skip(f"TREC DL 2019 data not found at {folder} (it stands in for NIST's login-only runs)")
    return folder


def test_trec_dl_2019_from_a_local_mirror_is_the_shared_data(tmp_path, dl19_shared):
    mirror = tmp_path / "mirror"
    dl19_mirror(load_bundle("trec-dl-2019"), mirror, dl19_shared)
    with serve(mirror) as (base, handler):
        done = fetch("trec-dl-2019", tmp_path / "data", base)
    assert done.returncode == 0, done.stdout + done.stderr
    got = tmp_path / "data" / "trec-dl-2019"
    for name in ("qrels.txt", "passages.jsonl", "official-nist.json", "groups.tsv"):
        assert f"ok      {name}: made by rule" in done.stdout and (got / name).read_bytes() == (dl19_shared / name).read_bytes()
    for run in sorted((dl19_shared / "runs").glob("*.run")):
        assert (got / "runs" / run.name).read_bytes() == run.read_bytes()
    assert done.stdout.count("equals the copy behind this project's published figures") == 38  # 37 runs and UMBRELA's qrels
    assert done.stdout.strip().endswith("43 of 43 files (5 verified against the manifest, 38 unverified, their sha256 recorded)")
    # the shared copy's topics now equal the public file (qid 527433 reads "cerebral palsy" in both)
    assert (got / "topics.tsv").read_bytes() == (dl19_shared / "topics.tsv").read_bytes()
    assert "527433\ttypes of dysarthria from cerebral palsy" in (got / "topics.tsv").read_text().splitlines()


def test_a_data_folder_copy_as_mirror_has_its_corrupted_topics_refused_and_rebuilt_from_the_public_file(tmp_path, dl19_shared):
    mirror = tmp_path / "mirror"
    dl19_mirror(load_bundle("trec-dl-2019"), mirror, dl19_shared)
    # the one-word corruption a copy of this data once carried (qid 527433: "19335 palsy" for "cerebral palsy")
    corrupted = (dl19_shared / "topics.tsv").read_text().replace("from cerebral palsy", "from 19335 palsy")
    assert corrupted != (dl19_shared / "topics.tsv").read_text()
    (mirror / "trec-dl-2019" / "topics.tsv").write_text(corrupted)
    done = fetch("trec-dl-2019", tmp_path / "data", str(mirror))
    assert done.returncode == 0, done.stderr
    assert "ok      topics.tsv: made by rule 'judged-topics'; sha256 matches the manifest (verified)" in done.stdout
    assert "refused the mirror's topics.tsv: sha256" in done.stdout


def test_an_interrupted_fetch_resumes_and_a_corrupted_file_is_fetched_again(tmp_path, dl19_shared):
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    bundle = load_bundle("trec-dl-2019")
    dl19_mirror(bundle, mirror, dl19_shared)
    passages = bundle.source("trema-passages")
    path = "/" + passages.url.split("://", 1)[1]
    with serve(mirror) as (base, handler):
        handler.cut_after[path] = 1_000_000
        first = fetch("trec-dl-2019", data, base)
        assert first.returncode == 3 and first.stderr.count("\n") == 1
        assert f"closed after 1,000,000 of {passages.size:,} bytes; run again to resume" in first.stderr
        second = fetch("trec-dl-2019", data, base)
        assert second.returncode == 0, second.stderr
        assert (path, "bytes=1000000-") in handler.requests
        assert "ok      passages.jsonl: made by rule 'judged-passages'; sha256 matches the manifest (verified)" in second.stdout
        # damage a file the examples read: refused by its checksum and made again
        with open(data / "trec-dl-2019" / "qrels.txt", "r+b") as handle:
            handle.seek(100)
            handle.write(b"9")
        third = fetch("trec-dl-2019", data, base)
    assert third.returncode == 0
    assert "ok      qrels.txt: made by rule 'copy'; sha256 matches the manifest (verified)" in third.stdout
    assert "refused the copy already here: sha256" in third.stdout
    assert (data / "trec-dl-2019" / "qrels.txt").read_bytes() == (dl19_shared / "qrels.txt").read_bytes()


def test_extrapolate_eval_from_a_local_mirror_is_all_verified_and_equals_the_shared_splits(tmp_path):
    shared = SHARED_DATA / "extrapolate-eval"
    mirror = tmp_path / "mirror"
    github_sources(load_bundle("extrapolate-eval"), mirror)
    with serve(mirror) as (base, _):
        done = fetch("extrapolate-eval", tmp_path / "data", base)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("13 of 13 files (13 verified against the manifest, 0 unverified, their sha256 recorded)")
    if shared.is_dir():
        for item in load_bundle("extrapolate-eval").files:
            assert (tmp_path / "data" / "extrapolate-eval" / item.path).read_bytes() == (shared / item.path).read_bytes()


@pytest.mark.parametrize(("name", "topics"), [("trec-dl-2020", 54), ("trec-dl-2021", 53)])
def test_trec_dl_2020_and_2021_from_a_local_mirror_verify_topics_and_qrels_and_record_the_rest(tmp_path, name, topics):
    """NIST's login-only runs and ir_datasets' corpus are stood in for (a one-line run each, a
    passages file in a data folder copy): the fetch must call them unverified."""
    bundle = load_bundle(name)
    mirror = tmp_path / "mirror"
    github_sources(bundle, mirror)
    for source in bundle.sources:
        if source.id.startswith("nist-"):
            place(mirror, source.url, gzip.compress(f"q Q0 d 1 1.0 {source.id[5:]}\n".encode(), mtime=0))
    (mirror / name).mkdir()
    (mirror / name / "passages.jsonl").write_text('{"docid": "d", "text": "stand-in"}\n')
    with serve(mirror) as (base, _):
        done = fetch(name, tmp_path / "data", base)
    assert done.returncode == 0, done.stderr
    assert "ok      qrels.txt: made by rule 'copy'; sha256 matches the manifest (verified)" in done.stdout
    assert "ok      topics.tsv: made by rule 'judged-topics'; sha256 matches the manifest (verified)" in done.stdout
    assert "ok      passages.jsonl: from the mirror's copy" in done.stdout and "UNVERIFIED" in done.stdout
    assert len((tmp_path / "data" / name / "topics.tsv").read_text().splitlines()) == topics
    runs = len([f for f in bundle.files if f.path.startswith("runs/")])
    assert done.stdout.strip().endswith(
        f"{3 + runs} of {3 + runs} files (2 verified against the manifest, {1 + runs} unverified, their sha256 recorded)"
    )


def atomic_mirror(mirror: Path) -> None:
    """Stand-ins for every AToMiC source (none is public here): a parquet of 3 topics, qrels judging
    2 of them, one line per run, and a data folder copy holding three pooled images."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    bundle = load_bundle("atomic-2023")
    table = pa.table(
        {
            "text_id": ["t1", "t2", "t3"],
            "page_title": ["Cat", "Dog", "Unjudged"],
            "section_title": ["Fur", "Barking", "-"],
            "context_section_description": ["Cats have fur.", "Dogs bark.", "-"],
            "context_page_description": ["A cat.", "A dog.", "-"],
        }
    )
    mirror.mkdir(parents=True)
    topics = mirror / "topics.parquet"
    pq.write_table(table, topics)
    place(mirror, bundle.source("hf-topics").url, topics.read_bytes())
    topics.unlink()
    place(mirror, bundle.source("nist-qrels").url, b"t1 Q0 i1 2\nt1 Q0 i2 0\nt2 Q0 i3 1\nt2 Q0 i1 0\n")
    for source in bundle.sources:
        if source.id.startswith("nist-") and source.id != "nist-qrels":
            place(mirror, source.url, gzip.compress(f"t1 Q0 i1 1 2.0 {source.id[5:]}\nt2 Q0 i3 1 1.0 {source.id[5:]}\n".encode(), mtime=0))
    copy = mirror / "atomic-2023"
    (copy / "images").mkdir(parents=True)
    for number, docid in enumerate(["i1", "i2", "i3"]):
        Image.new("RGB", (8, 8), (number * 80, 0, 0)).save(copy / "images" / f"{docid}.png")
    (copy / "images.jsonl").write_text("".join(json.dumps({"docid": d, "image": f"images/{d}.png"}) + "\n" for d in ["i1", "i2", "i3"]))


def test_atomic_2023_from_a_local_mirror_then_its_configs_dry_run_on_the_fetched_layout(tmp_path):
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    atomic_mirror(mirror)
    with serve(mirror) as (base, _):
        done = fetch("atomic-2023", data, base, "--max-images", "2")
    assert done.returncode == 0, done.stderr
    folder = data / "atomic-2023"
    topics = [json.loads(line) for line in (folder / "topics.jsonl").read_text().splitlines()]
    assert [t["qid"] for t in topics] == ["t1", "t2"]  # only the judged topics, in the qrels' order
    assert topics[1] == {
        "qid": "t2",
        "text": "Dogs bark.",
        "page_title": "Dog",
        "section_title": "Barking",
        "section_context": "Dogs bark.",
        "page_context": "A dog.",
    }
    assert (folder / "pooled-images.txt").read_text() == "i1\ni2\ni3\n"
    assert "images: 2 wanted, 0 already here, 2 fetched, 0 failed; 2 of 3 pooled images (--max-images)" in done.stdout
    assert (folder / "images.jsonl").read_text() == '{"docid": "i1", "image": "images/i1.png"}\n{"docid": "i2", "image": "images/i2.png"}\n'
    assert done.stdout.splitlines()[0].endswith("19 of 19 files (0 verified against the manifest, 19 unverified, their sha256 recorded)")
    # a dry run checks the judge can start (issue 44): an API key is set for the gpt4v job (nothing is sent); a judge this
    # machine cannot start (vLLM not installed, a model not in an offline cache) is refused in one line naming the fix
    env = {**os.environ, "QRELKIT_DATA": str(data), "OPENAI_API_KEY": "sk-dry-run-only"}
    started = []
    for config in sorted((ROOT / "configs").glob("atomic-*.yaml")):
        dry = subprocess.run(
            [sys.executable, "-m", "qrelkit.cli", "judge", str(config), "--dry-run", "--set", f"database={tmp_path / 'atomic.duckdb'}"],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        if dry.returncode == 2 and config.stem in ("atomic-llava-vllm", "atomic-llava-transformers"):
            assert len(dry.stderr.strip().splitlines()) == 1 and ("not installed" in dry.stderr or "cache" in dry.stderr), dry.stderr
            continue
        assert dry.returncode == 0, (config.name, dry.stderr)
        assert "would load topics 'topics' (2 rows)" in dry.stdout and "would load documents 'images' (2 rows)" in dry.stdout
        assert "would load qrels 'nist' (4 rows)" in dry.stdout, dry.stdout
        assert "would load 16 runs (32 rows): " in dry.stdout, dry.stdout  # the mirror's 16 runs, b_bm25 among them, 2 lines each
        started.append(config.stem)
    assert {"atomic-clipscore", "atomic-gpt4v"} <= set(started)
