"""`qrelkit data fetch`: the manifests hold together, each rule does what its docstring states,
downloads resume and are checked, and failures are one line (on small files made here; the public
data itself is in test_bundles_public.py)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from bundle_mirror import a_bundle, serve

from qrelkit.io import derive
from qrelkit.io.bundles import Bundle, bundle_names, data_root, load_bundle
from qrelkit.io.net.download import Mirror, Unreachable, download
from qrelkit.io.net.fetch import Fetcher
from qrelkit.io.net.fetch_images import url_problem

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\nq2 0 d1 0\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def qrelkit(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qrelkit.cli", *args], capture_output=True, text=True, env=env, cwd=cwd)


# -- the manifests -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", bundle_names())
def test_every_manifest_names_known_rules_and_a_verified_file_is_made_only_from_verified_inputs(name):
    bundle = load_bundle(name)
    made = {}
    for item in bundle.files:
        assert item.rule in derive.RULES or item.rule == "manual", item.rule
        inputs = [bundle.source(i) or made[i] for i in item.inputs]
        if item.verified:  # a checksum established from public snapshots cannot rest on an unverified input
            assert all(i.verified for i in inputs), item.path
        assert item.checksum.startswith("verified" if item.verified else "unverified"), item.path
        made[item.path] = item
    for source in bundle.sources:
        assert source.checksum.startswith("verified" if source.verified else "unverified"), source.id
        assert source.verified == (source.size is not None), source.id


def test_the_four_bundles_of_the_issue_and_the_splits_are_shipped_as_package_data():
    assert {"trec-dl-2019", "trec-dl-2020", "trec-dl-2021", "atomic-2023", "extrapolate-eval"} <= set(bundle_names())
    dl19 = load_bundle("trec-dl-2019")
    assert [f.path for f in dl19.files if not f.path.startswith("runs/")] == [
        "qrels.txt", "topics.tsv", "passages.jsonl", "official-nist.json", "groups.tsv", "umbrela-gpt4o.qrels"
    ]  # fmt: skip
    assert len([f for f in dl19.files if f.path.startswith("runs/")]) == 37


def test_an_unknown_bundle_is_one_line_naming_those_there_are():
    done = qrelkit("data", "fetch", "trec-dl-2018")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: no data bundle named 'trec-dl-2018'; there are: atomic-2023,")
    assert "Traceback" not in done.stderr


def test_the_data_folder_is_qrelkit_data_else_the_per_user_xdg_folder(tmp_path):
    assert data_root({"QRELKIT_DATA": str(tmp_path)}) == tmp_path
    assert data_root({"XDG_DATA_HOME": "/x/share"}) == Path("/x/share/qrelkit")
    assert data_root({}) == Path.home() / ".local" / "share" / "qrelkit"


def test_a_job_reads_qrelkit_data_from_the_default_data_folder_when_it_is_unset(tmp_path):
    from qrelkit.errors import QrelkitError
    from qrelkit.jobs import load_job

    job = Path(__file__).resolve().parents[1] / "configs" / "dl19-minilm.yaml"
    with pytest.raises(QrelkitError, match=f"{tmp_path}/qrelkit/trec-dl-2019/topics.tsv not found"):
        load_job(job, environ={"XDG_DATA_HOME": str(tmp_path)}).check_paths()


# -- the rules -----------------------------------------------------------------------------------


def run_rule(tmp_path: Path, name: str, inputs: dict[str, bytes], options: dict | None = None) -> str:
    paths = []
    for file, data in inputs.items():
        (tmp_path / file).write_bytes(data)
        paths.append(tmp_path / file)
    derive.apply_rule(name, paths, options or {}, tmp_path / "out")
    return (tmp_path / "out").read_text(encoding="utf-8")


def test_judged_run_top_keeps_judged_pairs_within_depth_and_renumbers_a_run_that_counts_from_zero(tmp_path):
    run = "q1 Q0 d9 0 9.5 t\nq1\tQ0\td1 1 8.25 t\nq1 Q0 d2 2 7 t\nq2 Q0 d3 0 5 t\nq2 Q0 d1 3 1e-3 t\n"
    kept = run_rule(tmp_path, "judged-run-top", {"run.gz": gzip.compress(run.encode()), "q.txt": QRELS.encode()}, {"depth": 3})
    # d9 unjudged; q2's d1 at rank 3 becomes 4 > depth; tokens verbatim, ranks from 1
    assert kept == "q1 Q0 d1 2 8.25 t\nq1 Q0 d2 3 7 t\nq2 Q0 d3 1 5 t\n"
    cut = tmp_path / "cut"
    cut.mkdir()
    assert (
        run_rule(cut, "judged-run-top", {"run": kept.encode(), "q.txt": QRELS.encode()}, {"depth": 3}) == kept
    )  # a cut run cuts to itself


def test_judged_passages_follow_the_order_of_first_judgment_and_a_missing_text_names_the_file(tmp_path):
    docs = b'{"docid": "d3", "doc": "three \\u2026"}\n{"docid": "d1", "doc": "one"}\n'
    docs += b'{"docid": "d2", "doc": "two"}\n{"docid": "d7", "doc": "x"}\n'
    out = run_rule(tmp_path, "judged-passages", {"docs.jsonl": docs, "q.txt": QRELS.encode()}, {"text_field": "doc"})
    assert out == '{"docid": "d1", "text": "one"}\n{"docid": "d2", "text": "two"}\n{"docid": "d3", "text": "three \\u2026"}\n'
    with pytest.raises(derive.DeriveError, match=r"docs.jsonl has no text for 1 judged passage\(s\), e.g. d3"):
        run_rule(
            tmp_path,
            "judged-passages",
            {"docs.jsonl": docs.splitlines(True)[1] + docs.splitlines(True)[2], "q.txt": QRELS.encode()},
            {"text_field": "doc"},
        )


def test_judged_topics_keep_the_judged_lines_in_the_file_order(tmp_path):
    topics = "q0\tnot judged\nq2\tsecond\nq1\tfirst\n"
    assert run_rule(tmp_path, "judged-topics", {"t.tsv": topics.encode(), "q.txt": QRELS.encode()}) == "q2\tsecond\nq1\tfirst\n"


RESULTS_PAGE = """# Results
#### runA
??? example "summary (passages-eval)"
\t```
\tmap\t\t\t\tall\t0.4571
\trecip_rank\t\tall\t0.8702
\tndcg_cut_10\t\tall\t0.7314
\t```
??? example "summary (trec_eval)"
\t```
\tmap\t\t\t\tall\t0.9999
\t```
---
#### runB
??? example "summary (trec_eval)"
\t```
\tmap\t\t\t\tall\t0.1
\t```
"""


def test_nist_figures_read_the_passages_eval_summary_not_trec_eval(tmp_path):
    out = run_rule(tmp_path, "nist-figures", {"results.md": RESULTS_PAGE.encode()}, {"runs": ["runA"]})
    assert out == '{\n "runA": {\n  "map_rel2": 0.4571,\n  "ndcg_cut_10": 0.7314,\n  "recip_rank_rel2": 0.8702\n }\n}'
    with pytest.raises(derive.DeriveError, match="no passages-eval summary for runB"):
        run_rule(tmp_path, "nist-figures", {"results.md": RESULTS_PAGE.encode()}, {"runs": ["runA", "runB"]})


def test_run_groups_take_the_participant_from_the_runs_page_and_the_family_from_the_manifest(tmp_path):
    page = "#### b\n- **Participant:** G2 \n---\n#### a\n- **Participant:** G1 \n"
    out = run_rule(tmp_path, "run-groups", {"runs.md": page.encode()}, {"families": {"b": "neural", "a": "traditional"}})
    assert out == "run\tgroup\tfamily\na\tG1\ttraditional\nb\tG2\tneural\n"


def test_sorted_qids_and_pooled_ids(tmp_path):
    assert run_rule(tmp_path, "sorted-qids", {"q.txt": b"10 0 d 1\n9 0 d 0\n10 0 e 1\n"}) == "10\n9\n"
    assert run_rule(tmp_path, "pooled-ids", {"q.txt": QRELS.encode()}) == "d1\nd2\nd3\n"


def test_parquet_topics_map_columns_and_name_a_missing_one(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"text_id": ["q2", "q1", "q9"], "section": ["S2", "S1", "S9"], "title": ["T2", "T1", None]})
    pq.write_table(table, tmp_path / "t.parquet")
    paths = [tmp_path / "t.parquet", tmp_path / "q.txt"]
    (tmp_path / "q.txt").write_text(QRELS)
    derive.apply_rule("parquet-topics", paths, {"qid": "text_id", "text": "section", "fields": {"page_title": "title"}}, tmp_path / "out")
    rows = [json.loads(line) for line in (tmp_path / "out").read_text().splitlines()]
    assert rows == [{"qid": "q1", "text": "S1", "page_title": "T1"}, {"qid": "q2", "text": "S2", "page_title": "T2"}]
    with pytest.raises(derive.DeriveError, match="has no column context_section_description"):
        derive.apply_rule("parquet-topics", paths, {"qid": "text_id", "text": "context_section_description"}, tmp_path / "out")


def test_a_public_file_of_another_form_is_one_line_naming_the_file_and_line(tmp_path):
    with pytest.raises(derive.DeriveError, match=r"q.txt:2: expected 4 columns .* the public file does not have the form the rule"):
        run_rule(tmp_path, "pooled-ids", {"q.txt": b"q1 0 d1 1\n<html>\n"})


# -- downloads -----------------------------------------------------------------------------------


def test_an_interrupted_download_resumes_with_a_range_request(tmp_path):
    data = bytes(range(256)) * 4096  # 1 MiB
    (tmp_path / "site" / "example.org").mkdir(parents=True)
    (tmp_path / "site" / "example.org" / "big.bin").write_bytes(data)
    dest = tmp_path / "got" / "big.bin"
    with serve(tmp_path / "site") as (base, handler):
        handler.cut_after["/example.org/big.bin"] = 300_000
        with pytest.raises(Unreachable, match=r"closed after 300,000 of 1,048,576 bytes; run again to resume"):
            download("https://example.org/big.bin", dest, mirror=Mirror(base))
        assert dest.with_name("big.bin.part").stat().st_size == 300_000
        download("https://example.org/big.bin", dest, mirror=Mirror(base))
        assert handler.requests == [("/example.org/big.bin", None), ("/example.org/big.bin", "bytes=300000-")]
    assert dest.read_bytes() == data and not dest.with_name("big.bin.part").exists()


def test_a_corrupted_file_is_refused_by_its_checksum_and_fetched_again(tmp_path):
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    bundle = a_bundle(tmp_path, mirror, {"a.txt": b"alpha\n", "b.txt": b"beta\n"})
    reports = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert [r.status for r in reports] == ["built", "built"] and all(r.verified for r in reports)
    (root / "tiny" / "a.txt").write_bytes(b"alphA\n")  # the file the examples read
    (root / ".sources" / "example.org" / "data" / "b.txt").write_bytes(b"bet\n")  # the cached download
    (root / "tiny" / "b.txt").unlink()
    reports = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert reports[0].status == "built" and "refused the copy already here: sha256" in reports[0].notes[1]
    assert reports[1].status == "built" and any(n.startswith("refused the cached b.txt") for n in reports[1].notes)
    assert (root / "tiny" / "a.txt").read_bytes() == b"alpha\n" and (root / "tiny" / "b.txt").read_bytes() == b"beta\n"


def test_a_download_that_arrives_wrong_twice_is_refused_and_not_kept(tmp_path):
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    bundle = a_bundle(tmp_path, mirror, {"a.txt": b"alpha\n"})
    (mirror / "example.org" / "data" / "a.txt").write_bytes(b"alphA\n")  # the mirror itself is damaged
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "failed"
    assert report.notes[-1] == "https://example.org/data/a.txt: refused twice by its checksum; not kept"
    assert not (root / "tiny" / "a.txt").exists() and not (root / ".sources" / "example.org" / "data" / "a.txt").exists()


def test_an_unverified_file_is_recorded_on_first_fetch_and_a_later_change_is_refused(tmp_path):
    mirror, root = tmp_path / "mirror", tmp_path / "data"
    bundle = a_bundle(tmp_path, mirror, {"a.txt": b"alpha\n"}, verified=False)
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert report.status == "built" and not report.verified and f"sha256 {sha(b'alpha' + bytes([10]))[:12]}… recorded" in report.notes[0]
    state = json.loads((root / "tiny" / ".qrelkit-bundle.json").read_text())
    assert state["files"]["a.txt"]["sha256"] == sha(b"alpha\n") and state["files"]["a.txt"]["verified"] is False
    (root / "tiny" / "a.txt").write_bytes(b"changed\n")
    [report] = Fetcher(bundle, root, mirror=Mirror.parse(str(mirror))).fetch_files()
    assert "refused the copy already here" in report.notes[1] and (root / "tiny" / "a.txt").read_bytes() == b"alpha\n"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_mirror_is_one_line_exit_3_naming_it_and_what_to_do(tmp_path):
    done = qrelkit("data", "fetch", "extrapolate-eval", "--to", str(tmp_path), "--mirror", f"http://127.0.0.1:{closed_port()}")
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: 127.0.0.1 could not be reached for http://127.0.0.1:")
    assert "Traceback" not in done.stderr


def test_offline_the_network_is_one_line_naming_the_host_and_the_mirror_option(tmp_path):
    env = {**os.environ, "https_proxy": f"http://127.0.0.1:{closed_port()}", "HTTPS_PROXY": f"http://127.0.0.1:{closed_port()}"}
    done = qrelkit("data", "fetch", "extrapolate-eval", "--to", str(tmp_path), env=env)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(
        "error: raw.githubusercontent.com could not be reached for https://raw.githubusercontent.com/jingtaozhan/"
    )
    assert done.stderr.strip().endswith("offline? fetch from a copy with --mirror DIR|URL") and done.stderr.count("\n") == 1


def test_a_source_behind_a_login_names_the_variable_that_holds_it_and_sends_it_only_when_set(tmp_path, monkeypatch):
    from qrelkit.io.bundles import BundleFile, Source

    site = tmp_path / "site"
    (site / "example.org").mkdir(parents=True)
    (site / "example.org" / "run.gz").write_bytes(gzip.compress(b"q1 Q0 d1 1 1.0 t\n"))
    with serve(site) as (base, handler):
        handler.status_for["/example.org/run.gz"] = 401
        # model_construct: manifests allow only https:// sources; this one is the local test server
        source = Source.model_construct(id="r", url=f"{base}/example.org/run.gz", auth_env="TREC_RESULTS_AUTH", checksum="unverified: t")
        item = BundleFile(path="run.gz", what="w", rule="copy", inputs=["r"], checksum="unverified: t")
        bundle = Bundle.model_construct(name="tiny", sources=[source], files=[item], images=None)
        monkeypatch.delenv("TREC_RESULTS_AUTH", raising=False)
        [report] = Fetcher(bundle, tmp_path / "data").fetch_files()
        assert report.status == "failed"
        assert report.notes[-1] == (
            f"{base}/example.org/run.gz: needs a login (HTTP 401): "
            "set TREC_RESULTS_AUTH=user:password (it is not set), or fetch with --mirror"
        )
        monkeypatch.setenv("TREC_RESULTS_AUTH", "me:secret")
        del handler.status_for["/example.org/run.gz"]
        [report] = Fetcher(bundle, tmp_path / "data").fetch_files()
        assert report.status == "built"
        assert handler.auths == [None, "Basic " + base64.b64encode(b"me:secret").decode()]
    assert "secret" not in json.dumps(report.notes) + (tmp_path / "data" / "tiny" / ".qrelkit-bundle.json").read_text()


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://upload.wikimedia.org/a.jpg", None),
        ("http://upload.wikimedia.org/a.jpg", "only https:// image URLs are fetched (not http:)"),
        ("file:///etc/passwd", "only https:// image URLs are fetched (not file:)"),
        ("https://169.254.169.254/latest", "names a link-local address"),
        ("https://10.0.0.1/x.jpg", "names a private address"),
        ("https://localhost/x.jpg", "names a local name"),
    ],
)
def test_image_urls_from_a_table_follow_the_hostile_input_rules(url, problem):
    assert url_problem(url) == problem


def test_a_mirror_that_is_not_there_is_a_usage_error_exit_2(tmp_path):
    done = qrelkit("data", "fetch", "extrapolate-eval", "--to", str(tmp_path), "--mirror", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert done.stderr == f"error: --mirror {tmp_path / 'nowhere'}: not a folder (nor an http:// or https:// URL)\n"
