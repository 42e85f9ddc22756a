"""Issue 37, "the answer first, every time": `qrelkit compare` leads every output with the verdict in
sentences (which judge is better, by how much, how sure), says where an interval and the test
disagree, when judges are samples and which grades κ compared; the report marks an estimate outside
its interval with its reason and lists each note and warning on its own; `agree --json` names the
statistic and measure of every interval note (an extreme BCa bias correction included); and the
small things a newcomer meets (a one-line repr, "all sweep cells failed", a missing bundle folder,
"did you mean", FD in `correlate`, τ_AP's ties)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hostile import one_error, qrelkit
from tracks import write_close_track, write_track

from qrelkit.evaluate.bootstrap import IntervalEstimate
from qrelkit.evaluate.compare import PairedDifference
from qrelkit.evaluate.labels import GradeMaps
from qrelkit.report.text import markdown_text

# -- the comparison: verdict first --------------------------------------------------------------


def judge_file(folder: Path, qrels: Path, name: str, replaced: float, seed: int) -> Path:
    """A judge's qrels: the reference's grades with a share of them replaced by a random grade."""
    rng = np.random.default_rng(seed)
    lines = []
    for line in qrels.read_text().splitlines():
        qid, _, docid, grade = line.split()
        shown = int(rng.integers(0, 4)) if rng.random() < replaced else int(grade)
        lines.append(f"{qid} 0 {docid} {shown}")
    path = folder / f"{name}.qrels"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def track(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("verdict")
    qrels, runs = write_track(folder, n_runs=12, n_queries=20)
    judges = [judge_file(folder, qrels, "close", 0.2, 1), judge_file(folder, qrels, "noisy", 0.6, 2)]
    return {"folder": folder, "qrels": qrels, "runs": runs, "judges": judges}


def compare_args(track: dict, *more: str) -> list[str]:
    judges = [arg for path in track["judges"] for arg in ("--judge", path.name)]
    return ["compare", *judges, "--reference-qrels", "qrels.txt", "--runs", "runs", "--resamples", "200", "--permutations", "200", *more]


def compared_json(track: dict, *more: str) -> dict:
    done = qrelkit(*compare_args(track, *more, "--json"), cwd=track["folder"])
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def signed(value: float, digits: int) -> str:
    return f"{value:+.{digits}f}".replace("-", "−")


def test_compare_leads_with_the_verdict_in_every_format(track):
    """The first line is the answer: whose labels are better and by how much (Δκ [CI], p, as the JSON
    has it), and that the rankings cannot be told apart; then the table. Markdown and the page alike."""
    payload = compared_json(track)
    found = {(d["statistic"], d["measure"]): d for d in payload["differences"]}
    kappa = found[("cohen_kappa", None)]
    assert kappa["p_value"] < 0.05 and kappa["ci"][0] > 0  # the close judge's labels are the better ones
    low, high = kappa["ci"]
    labels = f"close's labels are better by Δκ {signed(kappa['estimate'], 2)} [{low:.2f}, {high:.2f}], p = {kappa['p_value']:.3f}"
    taus = [found[("kendall_tau", m)] for m in ("nDCG@10", "AP(rel=2)")]
    assert all(t["indistinguishable"] for t in taus)
    rankings = "; ".join(f"Δτ {t['measure']} {signed(t['estimate'], 3)}, p = {t['p_value']:.2f}" for t in taus)
    sentence = f"close vs noisy: {labels}; the system rankings cannot be told apart ({rankings})."

    table = qrelkit(*compare_args(track), cwd=track["folder"]).stdout
    assert table.splitlines()[0] == sentence
    assert table.index(sentence) < table.index("Judges against") < table.index("Paired differences")
    markdown = qrelkit(*compare_args(track, "--format", "markdown"), cwd=track["folder"]).stdout
    assert markdown.startswith(f"**{markdown_text(sentence)}**")  # as written from data: brackets escaped, shown as they are
    page = track["folder"] / "page.html"
    qrelkit(*compare_args(track, "--html", str(page)), cwd=track["folder"])
    text = page.read_text(encoding="utf-8")
    assert text.index("id=verdict") < text.index("id=judges") and sentence.replace("'", "&#x27;") in text


def test_the_grade_map_is_said_beside_the_verdict(track):
    table = qrelkit(*compare_args(track, "--map", "3:2,2:2,1:1,0:0"), cwd=track["folder"]).stdout
    line = "note: κ compares the reference's through --map 3:2,2:2,1:1,0:0 and each judge's as given"
    assert line in table and table.index(line) < table.index("Judges against")


def difference(estimate: float, low: float, high: float, p: float, statistic: str = "kendall_tau") -> PairedDifference:
    interval = IntervalEstimate(low, high, "jackknife", 0.95, 43)
    return PairedDifference("a", "b", statistic, "nDCG@10" if statistic != "cohen_kappa" else None, estimate, interval, p, 43, 1000)


def fake_result(
    differences: list[PairedDifference], sample: dict | None = None, shared: int = 9260, restricted: bool = False
) -> SimpleNamespace:
    """A comparison as its document reads it (by field), for cases real data gives rarely."""
    labels = SimpleNamespace(reference_pairs=9260, shared_pairs=shared)
    audit = SimpleNamespace(labels=labels, maps=GradeMaps(), coverage=SimpleNamespace(restricted=restricted))
    comparison = SimpleNamespace(
        differences=differences, level=0.95, reference_name="nist", judges=["a", "b"], audits={"a": audit, "b": audit}
    )
    source = {"grading": {"sample": sample}} if sample else {}
    entries = [SimpleNamespace(name="a", source=source), SimpleNamespace(name="b", source={})]
    return SimpleNamespace(comparison=comparison, entries=entries, reference={"name": "nist"})


def test_an_interval_that_excludes_zero_with_a_large_p_is_noted_and_not_a_verdict():
    from qrelkit.commands.documents.compare import caveats
    from qrelkit.commands.documents.compare import pairwise as verdict

    result = fake_result([difference(0.08, 0.02, 0.12, 0.63), difference(0.13, 0.06, 0.20, 0.001, "cohen_kappa")])
    [sentence] = verdict(result)
    labels = "a's labels are better by Δκ +0.13 [0.06, 0.20], p = 0.001"
    rankings = "the system rankings are not shown to differ, the test and the interval disagreeing (Δτ +0.080, p = 0.63; see the notes)"
    assert sentence == f"a vs b: {labels}; {rankings}."
    assert "a − b, Δτ nDCG@10 = +0.0800: its 95% jackknife interval [0.020, 0.120] excludes 0 but p = 0.63 ≥ 0.05" in caveats(result)[0]
    # the second judge better: named as the winner, the difference and interval read as winner − loser
    [flipped] = verdict(fake_result([difference(-0.13, -0.20, -0.06, 0.001, "cohen_kappa")]))
    assert flipped == "a vs b: b's labels are better by Δκ +0.13 [0.06, 0.20], p = 0.001."


def test_a_comparison_of_samples_says_so():
    from qrelkit.commands.documents.compare import sample_lines

    sample = {"pairs": 600, "topics": 43, "seed": 0, "pool_pairs": 9260, "pool_topics": 43}
    lines = sample_lines(fake_result([], sample=sample))
    assert lines[0].startswith("a judged a sample of 600 pairs over 43 topics (seed 0, from a pool of 9260 pairs over 43 topics)")
    assert lines[0].endswith("its κ is on those pairs and its τ on runs scored by them alone")
    cut = sample_lines(fake_result([], sample=sample, restricted=True))[0]
    assert cut.endswith("its κ is on those pairs and its τ too, against the reference cut to them")
    assert sample_lines(fake_result([], shared=600))[0].startswith("a shares 600 of the reference's 9,260 pairs")


def test_a_compare_result_repr_is_one_short_line(track):
    import qrelkit as api

    result = api.compare(
        judges=[str(p) for p in track["judges"]], reference=str(track["qrels"]), runs=[str(track["runs"])], resamples=50, permutations=50
    )
    shown = repr(result)
    assert "\n" not in shown and len(shown) < 200, shown
    assert shown == "CompareResult(judges=['close', 'noisy'], reference='verdict0/qrels.txt', compared=2, differences=5)".replace(
        "verdict0", track["folder"].name
    )
    assert result.verdict()[0].startswith("close vs noisy: close's labels are better by Δκ")


# -- agree --json: every interval note named ----------------------------------------------------


def test_agree_json_names_the_statistic_and_measure_of_an_extreme_bias_correction(tmp_path):
    """DL21-shaped runs of close quality: the full-sample τ lies above nearly every resample, so BCa's
    interval is the top few resamples, above its own estimate (UMBRELA's Llama-3.2 qrels on DL21)."""
    reference, model, runs = write_close_track(tmp_path)
    done = qrelkit("agree", "--model-qrels", model, "--reference-qrels", reference, "--runs", runs, "--interval", "bca", "--json")
    payload = json.loads(done.stdout)
    notes = {(n["statistic"], n["measure"]): n for n in payload["interval_notes"]}
    note = notes[("kendall_tau", "nDCG@10")]
    tau = payload["systems"]["nDCG@10"]
    low, high = tau["kendall_tau_ci95"]
    assert tau["kendall_tau"] < low  # the estimate lies below its BCa interval ...
    assert f"the estimate {tau['kendall_tau']:.4g} lies below its 95% BCa interval" in note["note"]
    found = re.search(
        r"only (\d+\.\d)% of the resamples lie above the estimate.*z0 = \+(\d\.\d\d).*rests on the (\d+) of 1000", note["note"]
    )
    assert found and float(found.group(1)) < 2.5 and float(found.group(2)) > 1.96 and int(found.group(3)) < 25  # ... the top few resamples
    assert note["sentence"].startswith("Kendall τ-b, nDCG@10: ")
    assert payload["systems"]["nDCG@10"]["notes"]["kendall_tau"] == note["note"]  # the same note where it was
    # the default, the jackknife, holds its estimate
    default = json.loads(qrelkit("agree", "--model-qrels", model, "--reference-qrels", reference, "--runs", runs, "--json").stdout)
    low, high = default["systems"]["nDCG@10"]["kendall_tau_ci95"]
    assert default["bootstrap"]["method"] == "jackknife" and low <= default["systems"]["nDCG@10"]["kendall_tau"] <= high


# -- the report's headline ----------------------------------------------------------------------


def test_the_report_marks_an_estimate_outside_its_interval_and_lists_each_note_alone(tmp_path):
    reference, model, runs = write_close_track(tmp_path)
    page = tmp_path / "report.html"
    done = qrelkit("report", "--model-qrels", model, "--reference-qrels", reference, "--runs", runs, "--interval", "bca", "--out", page)
    assert done.returncode == 0, done.stderr
    text = page.read_text(encoding="utf-8")
    box = text[text.index("<section class=summary") : text.index("</section>")]
    mark = re.search(r'data-summary="tau-0-mark" title="([^"]+)">\*</span>', box)
    assert mark and "lies below its 95% BCa interval" in mark.group(1)
    notes = re.search(r'<ul class=warnings data-summary="interval-notes">(.*?)</ul>', box, flags=re.S).group(1)
    items = re.findall(r"<li>(.*?)</li>", notes)
    assert len(items) >= 2 and all(item.startswith("* ") for item in items)
    assert any(item.startswith("* Kendall τ-b, nDCG@10: the estimate") for item in items)


# -- small things -------------------------------------------------------------------------------


def test_a_missing_bundle_folder_is_one_line_naming_the_fetch(tmp_path):
    done = qrelkit("data", "path", "atomic-2023", "--to", tmp_path)
    assert one_error(done, 2) == (
        f"error: no data bundle 'atomic-2023' in {tmp_path} (its folder {tmp_path / 'atomic-2023'} does not exist): "
        f"fetch it with `qrelkit data fetch atomic-2023 --to {tmp_path}`"
    )
    (tmp_path / "atomic-2023").mkdir()
    assert qrelkit("data", "path", "atomic-2023", "--to", tmp_path).stdout.strip() == str(tmp_path / "atomic-2023")


def test_a_misspelled_job_key_names_the_key_it_meant(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("database: x.duckdb\ncolection: {topics: t.tsv}\npool: {depth: 10}\njudge: {name: embedding}\n")
    assert "job.yaml: colection: unknown key; did you mean 'collection'? (keys here: database, collection," in one_error(
        qrelkit("judge", job), 2
    )
    job.write_text("database: x.duckdb\ncollection: {topcs: t.tsv}\npool: {depth: 10}\njudge: {name: embedding}\n")
    assert "collection.topcs: unknown key; did you mean 'topics'?" in one_error(qrelkit("judge", job), 2)


@pytest.mark.parametrize(("given", "meant"), [("ndcg@10", "nDCG@10"), ("mrr@10", "RR@10"), ("precision@5", "P@5"), ("recall@100", "R@100")])
def test_a_ranx_style_measure_name_gets_the_spelling_qrelkit_reads(given, meant):
    demo = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
    done = qrelkit("evaluate", "--qrels", demo / "qrels.txt", "--runs", demo / "runs", "--measure", given)
    assert f"unknown measure {given!r}" in one_error(done, 2) and f"did you mean {meant!r}?" in done.stderr


def test_evaluate_with_a_set_name_and_no_database_says_a_stored_set_needs_db(tmp_path):
    done = qrelkit("evaluate", "--qrels", "nist", "--runs", tmp_path, cwd=tmp_path)
    assert "qrels 'nist': no such file, and there is no database qrelkit.duckdb to look up a stored set of that name" in one_error(done, 2)
    assert "--db FILE" in done.stderr


def test_all_sweep_cells_failed_says_all():
    from qrelkit.commands.sweep import SweepOutcome

    cells = [SimpleNamespace(status="failed") for _ in range(4)]
    assert SweepOutcome(Path("s.yaml"), ["k"], cells).failure() == "all 4 sweep cells failed (see above)"  # type: ignore[arg-type]
    cells[0].status = "ok"
    assert SweepOutcome(Path("s.yaml"), ["k"], cells).failure() == "3 of 4 sweep cells failed (the other 1 ran; see above)"  # type: ignore[arg-type]


def test_correlate_reads_fd_from_fd_json_and_explains_fd_as_a_measure(tmp_path):
    demo = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"
    asked = qrelkit("correlate", "--qrels", demo / "qrels.txt", "--runs", demo / "runs", "--measure", "nDCG@10", "--measure", "FD@10")
    assert "FD@10 is not scored from qrels but from embeddings, by `qrelkit fd`" in one_error(asked, 2)
    assert "qrelkit correlate --scores fd.json" in asked.stderr
    runs = sorted(p.stem for p in (demo / "runs").iterdir())
    fd = {"runs": {run: {"FD@10": 1.0 + i, "FD@10_ci95": None, "n_ret": 5} for i, run in enumerate(runs)}, "ks": [10]}
    (tmp_path / "fd.json").write_text(json.dumps(fd))
    done = qrelkit("correlate", "--qrels", demo / "qrels.txt", "--runs", demo / "runs", "--scores", tmp_path / "fd.json", "--json")
    payload = json.loads(done.stdout)
    assert payload["orderings"] == ["nDCG@10", "FD@10"]
    ndcg = json.loads(qrelkit("evaluate", "--qrels", demo / "qrels.txt", "--runs", demo / "runs", "--json").stdout)
    from scipy import stats

    means = [ndcg["runs"][run]["nDCG@10"] for run in runs]
    expected = stats.kendalltau(means, [1.0 + i for i in range(len(runs))]).statistic
    assert payload["correlations"]["kendall_tau"]["nDCG@10"]["FD@10"] == pytest.approx(expected, abs=1e-12)


def test_tau_ap_of_an_ordering_with_ties_against_itself_is_noted():
    from qrelkit.evaluate.correlate import rank_correlations

    scores = {"m": {"r1": 0.5, "r2": 0.5, "r3": 0.3, "r4": 0.1}, "n": {"r1": 0.4, "r2": 0.3, "r3": 0.2, "r4": 0.1}}
    result = rank_correlations(scores)
    itself = result.value("tau_ap", "m", "m")
    # by hand: r1 and r2 tie; the tied pair counts ½ at position 2: τ_AP = 2/3·(½/1 + 2/2 + 3/3) − 1 = 2/3
    assert itself == pytest.approx(2 / 3, abs=1e-12)
    assert result.notes == [
        "m: 1 pair of runs tie; τ_AP counts a pair tied under the truth as half correct, so τ_AP of m with itself is 0.6667, "
        "not 1 (τ-b and ρ correct for ties: 1)"
    ]


def test_a_failed_offline_fetch_leaves_nothing_behind(tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: every connection to it is refused
    proxy = {"https_proxy": f"http://127.0.0.1:{port}", "HTTPS_PROXY": f"http://127.0.0.1:{port}"}
    done = qrelkit("data", "fetch", "extrapolate-eval", "--to", tmp_path / "data", env=proxy)
    assert "could not be reached" in one_error(done, 3)
    assert not (tmp_path / "data").exists()  # no empty record, no `.sources/` tree, no bundle folder
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mine.txt").write_text("kept\n")
    qrelkit("data", "fetch", "extrapolate-eval", "--to", tmp_path / "data", env=proxy)
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["mine.txt"]  # a folder it did not make stays


CHROMIUM = Path("/usr/bin/chromium")


def chromium_probe(page: Path, script: str, tmp_path: Path) -> dict:
    """Run ``script`` (it sets window.probe) in ``page`` in headless Chromium at 1400×900, as
    tests/test_report.py does; the probe's JSON."""
    import html as html_module
    import subprocess

    probe = page.with_name("probe.html")
    hook = "<script>addEventListener('load', () => {" + script
    hook += "const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(window.probe);"
    hook += "document.body.append(pre);});</script></body>"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", hook), encoding="utf-8")
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    command += ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900"]
    command += [f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom", probe.as_uri()]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, flags=re.S)
    assert found, f"Chromium did not run the page's load handler; DOM starts {dom[:300]!r}"
    return json.loads(html_module.unescape(found.group(1)))


def test_the_per_topic_grading_table_of_dl19_is_not_cut_off_at_1400_px(dl19, tmp_path):
    """43 topics, each with its cut points and lowest score per grade in four digits (MiniLM-like
    scores): the table fits the page, nothing runs off it sideways."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (apt-get install -y chromium)")
    rng = np.random.default_rng(0)
    pairs = [line.split() for line in (dl19 / "qrels.txt").read_text().splitlines()]
    (tmp_path / "scores.tsv").write_text("".join(f"{q}\t{d}\t{0.05 + 0.9 * rng.random():.7f}\n" for q, _, d, _ in pairs))
    db = tmp_path / "scores.duckdb"
    assert qrelkit("import", "scores", tmp_path / "scores.tsv", "--name", "scores", "--db", db).returncode == 0
    assert qrelkit("grade", "--judge-run", "scores", "--name", "graded", "--db", db).returncode == 0  # per-topic quantiles
    page = tmp_path / "report.html"
    done = qrelkit(
        "report", "--judge-run", "scores", "--db", db, "--reference-qrels", dl19 / "qrels.txt", "--runs", dl19 / "runs", "--out", page
    )
    assert done.returncode == 0, done.stderr
    assert "<h3>Per topic (43)</h3>" in page.read_text(encoding="utf-8")
    script = "const t = [...document.querySelectorAll('table')].pop(); const r = t.getBoundingClientRect();"
    script += "window.probe = {right: r.right, width: innerWidth, scrollWidth: document.documentElement.scrollWidth};"
    probe = chromium_probe(page, script, tmp_path)
    assert probe["width"] == 1400 and probe["right"] <= 1400 and probe["scrollWidth"] <= 1400, probe


def test_the_times_the_docs_quote_are_the_measured_ones():
    """README example 2 and docs/python-api.md quote the medians benchmarks/bench_walkthroughs.py
    measured (benchmarks/RESULTS.md), not times from an earlier version (11 s, half a minute)."""
    root = Path(__file__).resolve().parents[1]
    results = (root / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    section = results[results.index("## Walkthroughs the docs time") :]
    agree = float(re.search(r"\| README example 2: qrelkit agree on DL19 \| ([\d.]+) \|", section).group(1))
    page = float(re.search(r"\| docs/python-api.md, every block \| ([\d.]+) \|", section).group(1))
    readme = (root / "README.md").read_text(encoding="utf-8")
    heading = next(line for line in readme.splitlines() if line.startswith("**2. Audit qrels made elsewhere**"))
    assert f"`agree` {agree:.1f} s" in heading and "11 s" not in heading, heading
    python_page = (root / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert f"about {page:.0f} s" in python_page and "half a minute" not in python_page
