"""Paths and URLs (issue 13, class 6): nothing is read outside the roots. Image paths are checked
against their root when read, every time; only regular files are opened (a FIFO does not hang a
job, not even a dry run); image URLs are forwarded only when https:// to a public host, or to a
host the job lists; a `module:Class` judge is imported only when the job or command allows it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from fake_openai import FakeOpenAI
from hostile import one_error, qrelkit, snapshot
from PIL import Image

from qrelkit.io import Document
from qrelkit.jobs import load_job, run_job
from qrelkit.judges.http import ImageURLRefused, checked_image_url
from qrelkit.storage import Store

TOPIC = {"qid": "q1", "text": "Egg", "page_title": "Egg", "section_title": "Cooking", "section_context": "Eggs are boiled."}


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def image_job(tmp_path: Path, server: FakeOpenAI, docs: list[dict], **options) -> Path:
    (tmp_path / "topics.jsonl").write_text(json.dumps(TOPIC) + "\n")
    (tmp_path / "images.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "pairs.txt").write_text("".join(f"q1 {d['docid']}\n" for d in docs))
    judge = {"model": "gpt-4o", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "timeout": 20.0, **options}
    spec = {
        "database": "img.duckdb",
        "collection": {"topics": "topics.jsonl", "documents": "images.jsonl", "image_root": "images"},
        "pool": {"pairs": "pairs.txt"},
        "template": "atomic-image-suggestion",
        "batch_size": 8,
        "flush_seconds": 0.001,
        "judge": {"name": "openai", "options": judge},
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    return tmp_path / "job.yaml"


def judged(database: Path) -> dict[str, tuple[str, str | None]]:
    with Store(database, read_only=True) as store:
        return {d: (s, e) for d, s, e in store.con.execute("SELECT docid, status, error FROM judgments").fetchall()}


@pytest.fixture
def images(tmp_path) -> Path:
    root = tmp_path / "images"
    root.mkdir()
    Image.new("RGB", (32, 32), (200, 10, 10)).save(root / "red.png")
    Image.new("RGB", (32, 32), (0, 0, 0)).save(tmp_path / "secret.png")  # outside the root
    return root


def test_a_fifo_in_the_image_root_hangs_neither_a_dry_run_nor_a_job(tmp_path, server, images, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    os.mkfifo(images / "pipe.png")
    path = image_job(tmp_path, server, [{"docid": "i1", "image": "red.png"}, {"docid": "i2", "image": "pipe.png"}])
    dry = qrelkit("judge", path, "--dry-run", "--json", timeout=300)  # blocking on the FIFO would hit the timeout
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["estimate"]["images"] == 2
    run_job(load_job(path), progress=False)
    outcome = judged(tmp_path / "img.duckdb")
    assert outcome["i1"] == ("ok", None)
    assert outcome["i2"] == ("input_error", f"image {images / 'pipe.png'} cannot be read: is a FIFO (named pipe), not a regular file")
    assert len(server.requests) == 1  # the FIFO's pair was never sent


def test_an_image_swapped_for_a_link_outside_the_root_after_loading_is_refused_when_read(tmp_path, server, images, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    Image.new("RGB", (32, 32), (0, 255, 0)).save(images / "green.png")
    path = image_job(tmp_path, server, [{"docid": "i1", "image": "red.png"}, {"docid": "i2", "image": "green.png"}])
    spec = load_job(path)
    run_job(spec, limit=0, progress=False)  # loaded (nothing judged): green.png was a regular file inside the root
    (images / "green.png").unlink()
    (images / "green.png").symlink_to(tmp_path / "secret.png")
    run_job(spec, progress=False)
    assert judged(spec.database)["i2"] == ("input_error", f"image {images / 'green.png'} is outside the image root {images}")
    secret = (tmp_path / "secret.png").read_bytes()
    import base64

    assert all(base64.b64encode(secret).decode() not in json.dumps(r.body) for r in server.requests)


def test_clipscore_checks_the_root_when_it_reads_an_image(tmp_path, images):
    pytest.importorskip("open_clip")
    from conftest import tiny_open_clip

    from qrelkit.io import Topic
    from qrelkit.judges import Pair, create_judge

    checkpoint = tiny_open_clip(tmp_path, "TinyClipHostile", embed_dim=16)
    options = {"model": "TinyClipHostile", "checkpoint": str(checkpoint), "model_config_file": str(tmp_path / "TinyClipHostile.json")}
    judge = create_judge("clipscore", {**options, "device": "cpu", "text": "query"}, None)
    Image.new("RGB", (32, 32), (0, 255, 0)).save(images / "green.png")
    document = Document("i2", image="green.png", image_root=str(images))  # as loaded: inside the root
    (images / "green.png").unlink()
    (images / "green.png").symlink_to(tmp_path / "secret.png")
    [judgment] = judge.judge([Pair(Topic("q1", "egg"), document)])
    assert (judgment.status, judgment.error) == ("input_error", f"image {images / 'green.png'} is outside the image root {images}")


@pytest.mark.parametrize(
    "url, allowed, refused",
    [
        ("https://upload.wikimedia.org/a.png", (), None),
        ("file:///etc/passwd", (), "only https:// URLs are forwarded (not file: URLs)"),
        ("http://169.254.169.254/latest/meta-data/", (), "http:// only to hosts listed"),
        ("https://169.254.169.254/latest/meta-data/", (), "names a link-local address"),
        ("https://127.0.0.1/a.png", (), "names a loopback address"),
        ("https://[::1]/a.png", (), "names a loopback address"),
        ("https://[::ffff:169.254.1.1]/a.png", (), "names a link-local address"),
        ("https://10.0.0.7/a.png", (), "names a private address"),
        ("https://2130706433/a.png", (), "names a numeric host"),
        ("https://localhost/a.png", (), "names a local name"),
        ("data:image/png;base64,AAAA", (), "only https:// URLs are forwarded (not data: URLs)"),
        ("http://images.internal.example/a.png", ("images.internal.example",), None),
        ("https://127.0.0.1/a.png", ("127.0.0.1",), None),
    ],
)
def test_image_urls_are_forwarded_only_to_public_https_hosts_or_listed_ones(url, allowed, refused):
    if refused is None:
        assert checked_image_url(url, allowed) == url
    else:
        with pytest.raises(ImageURLRefused, match=refused.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            checked_image_url(url, allowed)


def test_a_job_forwards_allowed_image_urls_and_fails_the_others_alone(tmp_path, server, images, monkeypatch):
    monkeypatch.delenv("QRELKIT_FAKE_KEY", raising=False)
    urls = {
        "i1": "https://upload.example.org/red.png",
        "i2": "file:///etc/passwd",
        "i3": "http://169.254.169.254/latest/meta-data/iam",
        "i4": "http://images.lab.example/red.png",
    }
    docs = [{"docid": d, "image": "red.png", "url": u} for d, u in urls.items()]
    path = image_job(tmp_path, server, docs, image_urls=True, image_url_hosts=["images.lab.example"])
    run_job(load_job(path), progress=False)
    outcome = judged(tmp_path / "img.duckdb")
    assert {d: s for d, (s, _) in outcome.items()} == {"i1": "ok", "i2": "input_error", "i3": "input_error", "i4": "ok"}
    assert outcome["i2"][1] == "image URL 'file:///etc/passwd': only https:// URLs are forwarded (not file: URLs)"
    sent = sorted(r.body["messages"][0]["content"][1]["image_url"]["url"] for r in server.requests)
    assert sent == ["http://images.lab.example/red.png", "https://upload.example.org/red.png"]


def test_a_module_class_judge_is_imported_only_when_allowed(tmp_path):
    marker = tmp_path / "imported"
    (tmp_path / "sneaky.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nfrom hostile_judges import LengthJudge as Judge\n")
    (tmp_path / "topics.tsv").write_text("q1\tgoldfish\n")
    (tmp_path / "docs.jsonl").write_text(json.dumps({"docid": "d1", "text": "goldfish"}) + "\n")
    (tmp_path / "pairs.tsv").write_text("q1\td1\n")
    job = {
        "database": "j.duckdb",
        "collection": {"topics": "topics.tsv", "documents": "docs.jsonl"},
        "pool": {"pairs": "pairs.tsv"},
        "judge": {"name": "sneaky:Judge"},
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{Path(__file__).parent}"}
    error = one_error(qrelkit("judge", "job.yaml", "--quiet", cwd=tmp_path, env=env), 2)
    assert error == (
        "error: judge 'sneaky:Judge' would import and run the Python module 'sneaky'; allow it with --allow-import "
        "(a job file cannot allow it by itself; registered judges need neither)"
    )
    assert not marker.exists() and snapshot(tmp_path / "j.duckdb") == {}  # nothing imported, nothing written
    # a job file that allows it itself (a shared job file, like a shared database, is data) does not
    (tmp_path / "job.yaml").write_text(yaml.safe_dump({**job, "allow_import": True}))
    assert one_error(qrelkit("judge", "job.yaml", "--quiet", cwd=tmp_path, env=env), 2) == error
    assert not marker.exists() and snapshot(tmp_path / "j.duckdb") == {}
    allowed = qrelkit("judge", "job.yaml", "--quiet", "--allow-import", "--no-grade", cwd=tmp_path, env=env)
    assert allowed.returncode == 0, allowed.stderr
    assert marker.read_text() == "ran"
