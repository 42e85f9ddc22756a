"""Auditing a judge run in the database (`--judge-run`), and `qrelkit report`'s HTML page: its
judge section, its figures, and that the page renders them in headless Chromium."""

from __future__ import annotations

import base64
import html
import json
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.errors import QrelkitError
from qrelkit.io import Qrel, Qrels, read_qrels, write_qrels
from qrelkit.storage import Store
from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run

runner = CliRunner()
CHROMIUM = Path("/usr/bin/chromium")
JUDGE_RUN_ID = "jr0123456789abcdef"
CONFIG = {"model": "minilm-int8", "batch_size": 32, "normalize": True}
LONG_LINE = "Judge how well the passage answers the query, weighing " * 40 + "https://example.org/" + "x" * 300
TEMPLATE = {"id": "trec-dl-graded", "system": "You judge passages.", "user": "Query: {query}\nPassage: {text}\n" + LONG_LINE}
ANSWER = "  The passage is about fleas, so I would say it is somewhat relevant to the query.\n"


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def add_judge_run(db: Path, human: Qrels, model_grades: dict[tuple[str, str], int], scores: dict, failed: list) -> None:
    """A judge run as the job runner writes it: the run, its judgments, and graded qrels."""
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo(JUDGE_RUN_ID, "embedding", CONFIG, "trec-dl-graded", "abc", TEMPLATE, "minilm"))
        keys = sorted(scores) + failed
        statuses = ["ok"] * len(scores) + ["parse_error", "model_error"] * (len(failed) // 2) + ["input_error"] * (len(failed) % 2)
        table = pa.table(
            {
                "judge_run_id": [JUDGE_RUN_ID] * len(keys),
                "qid": [q for q, _ in keys],
                "docid": [d for _, d in keys],
                "status": statuses,
                "score": pa.array([scores.get(k) for k in keys], pa.float64()),
                "error": [None if s == "ok" else f"{s} on purpose" for s in statuses],
                "raw_output": [ANSWER if s == "parse_error" else None for s in statuses],
                "tokens_in": pa.array([100] * len(keys), pa.int32()),
                "tokens_out": pa.array([5] * len(keys), pa.int32()),
                "cost": pa.array([0.001] * len(keys), pa.float64()),
                "latency_ms": pa.array([20.0] * len(keys), pa.float64()),
            }
        )
        store.con.register("rows", table)
        store.con.execute(f"INSERT INTO judgments ({', '.join(table.column_names)}) SELECT * FROM rows")
        store.con.unregister("rows")
        graded = Qrels("graded-jr", tuple(Qrel(q, d, g) for (q, d), g in sorted(model_grades.items())))
        cuts = {qid: [1.0 + i / 8, 2.0 + i / 8] for i, qid in enumerate(sorted({q for q, _ in keys}))}
        grading = {"method": "quantile", "quantiles": [0.5, 0.75], "labels": [0, 1, 2], "per_topic": True, "thresholds": cuts}
        store.save_qrels(graded, judge_run_id=JUDGE_RUN_ID, grading=grading)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    """8 topics × 15 documents, 6 runs of varying quality, a noisy judge, two failed pairs."""
    root = tmp_path_factory.mktemp("toy")
    rng = np.random.default_rng(11)
    human = {(f"q{t}", f"d{t}_{d}"): int(rng.choice(4, p=[0.5, 0.2, 0.2, 0.1])) for t in range(8) for d in range(15)}
    write_qrels(Qrels("human", tuple(Qrel(q, d, g) for (q, d), g in human.items())), root / "human.qrels")
    (root / "runs").mkdir()
    for r, noise in enumerate([0.2, 0.5, 1.0, 1.5, 2.5, 4.0]):
        lines = []
        for t in range(8):
            docs = [f"d{t}_{d}" for d in range(15)]
            score = {d: human[(f"q{t}", d)] + rng.normal(0, noise) for d in docs}
            lines += [
                f"q{t} Q0 {d} {i} {score[d]:.4f} {'neural' if r < 3 else 'bm'}{r}"
                for i, d in enumerate(sorted(docs, key=lambda d: -score[d]), 1)
            ]
        (root / "runs" / f"{'neural' if r < 3 else 'bm'}{r}.run").write_text("\n".join(lines) + "\n")
    scores = {k: g + rng.normal(0, 0.8) for k, g in human.items()}
    failed = sorted(scores)[:2]
    for key in failed:
        del scores[key]
    model = {k: int(np.digitize(s, [1.0, 2.0])) for k, s in scores.items()}
    write_qrels(Qrels("graded", tuple(Qrel(q, d, g) for (q, d), g in sorted(model.items()))), root / "model.qrels")
    db = root / "toy.duckdb"
    with Store(db) as store:
        store.load_qrels(root / "human.qrels", name="human")
    add_judge_run(db, read_qrels(root / "human.qrels"), model, scores, failed)
    return root


def test_agree_on_a_judge_run_equals_agree_on_its_exported_qrels(toy):
    common = ["--reference-qrels", "human", "--db", str(toy / "toy.duckdb"), "--runs", str(toy / "runs"), "--json", "--resamples", "50"]
    from_db = json.loads(invoke("agree", "--judge-run", JUDGE_RUN_ID[:6], *common))
    from_file = json.loads(invoke("agree", "--model-qrels", str(toy / "model.qrels"), *common))
    by_name = json.loads(invoke("agree", "--model-qrels", "graded-jr", *common))
    assert from_db["model"] == by_name["model"] == "graded-jr"
    for payload in (from_file, by_name):
        for key in ("pairs", "labels", "systems", "bias"):
            assert payload[key] == from_db[key]
    assert from_db["pairs"] == {"model": 118, "reference": 120, "shared": 118}


def test_a_judge_run_without_graded_qrels_is_a_clear_error(tmp_path, toy):
    db = tmp_path / "ungraded.duckdb"
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("jr-ungraded", "embedding", {}, None, None, None, None))
        store.load_qrels(toy / "human.qrels", name="human")
    result = runner.invoke(
        app, ["agree", "--judge-run", "jr-ungraded", "--db", str(db), "--reference-qrels", "human", "--runs", str(toy / "runs")]
    )
    assert isinstance(result.exception, QrelkitError)
    assert "has no graded qrels yet" in str(result.exception) and "qrelkit grade --judge-run jr-ungraded" in str(result.exception)
    # issue 23: --judge-run with --model-qrels names one of the run's graded sets; a set it did not grade is refused
    both = runner.invoke(
        app, ["agree", "--judge-run", "jr-ungraded", "--model-qrels", "human", "--reference-qrels", "human", "--db", str(db)]
    )
    assert isinstance(both.exception, QrelkitError) and "must name a qrels set graded from judge run jr-ungraded" in str(both.exception)
    assert "'human' is loaded from" in str(both.exception)
    neither = runner.invoke(app, ["agree", "--reference-qrels", "human", "--db", str(db)])
    assert "give the model qrels" in str(neither.exception)


REPORT_OPTIONS = ["--reference-qrels", "human", "--group", "neural=^neural", "--resamples", "50"]


def toy_options(toy: Path) -> list[str]:
    return ["--judge-run", JUDGE_RUN_ID, "--db", str(toy / "toy.duckdb"), "--runs", str(toy / "runs"), *REPORT_OPTIONS]


@pytest.fixture(scope="module")
def report_dir(toy) -> Path:
    out = toy / "report"
    invoke("report", *toy_options(toy), "--out", str(out))
    return out


@pytest.fixture(scope="module")
def page(report_dir) -> str:
    return (report_dir / "report.html").read_text(encoding="utf-8")


def summary_values(page: str) -> dict[str, str]:
    """The text of each element the summary box marks with data-summary (HTML entities decoded)."""
    box = page[page.index("<section class=summary") : page.index("</section>")]
    found = re.findall(r'data-summary="([^"]+)">(.*?)</(?:span|ul|code)>', box, flags=re.S)
    return {key: html.unescape(re.sub(r"<[^>]+>", "|", text)) for key, text in found}


def test_report_leads_with_the_summary_and_numbers_figures_in_order(page):
    sections = ["<section class=summary", "<h2>System ranking", "<h2>Label agreement", "<h2>Score distributions"]
    sections += ["<h2>Relative Δ toward groups", "<h2>Judge", "<h2>Grading", "<footer"]
    positions = [page.index(marker) for marker in sections]
    assert positions == sorted(positions), sections
    assert re.findall(r"<b>Figure (\d+)\.</b>", page) == ["1", "2", "3", "4"]  # scatter, confusion, scores, bias


def test_summary_box_shows_what_agree_prints(page, toy):
    """κ, τ [CI], Relative Δ, coverage and warnings in the box equal `agree --json` on the same inputs."""
    payload = json.loads(invoke("agree", *toy_options(toy), "--json"))
    box = summary_values(page)
    assert box["kappa"] == f"{payload['labels']['cohen_kappa']:.4f}"
    tau = payload["systems"]["nDCG@10"]
    assert box["tau-0"] == f"{tau['kendall_tau']:.4f}"
    assert box["tau-0-ci"] == "[{:.3f}, {:.3f}]".format(*tau["kendall_tau_ci95"])
    delta = payload["bias"]["neural"]["nDCG@10"]
    assert box["delta-0-0"] == f"{delta['difference']:.1f}" and box["delta-0-0-ci"] == "[{:.1f}, {:.1f}]".format(*delta["difference_ci95"])
    assert box["pairs"] == str(payload["pairs"]["shared"]) == "118" and box["queries"] == str(payload["queries"]) == "8"
    # the toy's model grades are 0–2 and the human ones 0–3, over 8 queries: both warnings, in the order agree gives them
    assert len(payload["warnings"]) == 2 and "different scales" in payload["warnings"][0] and "only 8 queries" in payload["warnings"][1]
    assert box["warnings"] == "|" + "||".join(payload["warnings"]) + "|"


def test_report_with_map_prints_the_kappa_agree_prints_with_map(toy, tmp_path):
    mapped = ["--map", "3:2,2:2,1:1,0:0"]
    invoke("report", *toy_options(toy), *mapped, "--out", str(tmp_path / "mapped.html"))
    box = summary_values((tmp_path / "mapped.html").read_text(encoding="utf-8"))
    payload = json.loads(invoke("agree", *toy_options(toy), *mapped, "--json"))
    unmapped = json.loads(invoke("agree", *toy_options(toy), "--json"))
    assert payload["labels"]["cohen_kappa"] != unmapped["labels"]["cohen_kappa"]  # the map matters here
    assert box["kappa"] == f"{payload['labels']['cohen_kappa']:.4f}"
    assert not any("different scales" in w for w in payload["warnings"]) and "different scales" not in box["warnings"]


def test_report_is_one_self_contained_file(report_dir, page):
    assert sorted(p.name for p in report_dir.iterdir()) == ["report.html"]
    sources = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert len(sources) == 4 and all(src.startswith("data:image/svg+xml;base64,") for src in sources)
    for src in sources:
        svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "</svg>" in svg


def test_report_shows_what_a_reviewer_needs_about_the_judge(page):
    text = re.sub(r"<[^>]+>", " ", page)
    assert JUDGE_RUN_ID in text and "minilm" in text
    assert re.search(r"parse_error\s+1\s+0\.8%", text) and re.search(r"model_error\s+1\s+0\.8%", text)
    assert re.search(r"ok\s+118\s+98\.3%", text)
    assert "12000 / 600" in text  # tokens in / out over 120 judgments
    assert "0.1200" in text  # cost
    assert "&quot;batch_size&quot;: 32" in page and "You judge passages." in text  # configuration and template
    assert "Cohen&#x27;s κ" in page and "Kendall τ-b" in page and "Relative Δ" in page
    assert "judge&#x27;s raw scores" in page  # the score figure uses the scores, not the grades


def test_failures_show_the_models_own_answer_trimmed(page):
    failures = page[page.index("<h3>Failures") : page.index("<h3>Configuration")]
    answer = html.escape(ANSWER.strip())
    assert f"<td class=text>{answer}</td><td class=text>parse_error on purpose</td>" in failures
    assert "(no answer)</td><td class=text>model_error on purpose</td>" in failures


def test_grading_thresholds_come_last_as_a_compact_table(page):
    grading = page[page.index("<h2>Grading") : page.index("<footer")]
    assert "{" not in grading and "&quot;" not in grading  # a table, not JSON
    assert "<th>per_topic</th><td>True</td>" in grading and "<th>quantiles</th><td>0.5, 0.75</td>" in grading
    cells = dict(re.findall(r"<td>(q\d)</td><td class=n>([^<]+)</td>", grading))
    assert cells == {f"q{i}": f"{1 + i / 8:.4g}, {2 + i / 8:.4g}" for i in range(8)}


def test_footer_names_version_date_and_command(page, toy):
    footer = html.unescape(page[page.index("<footer") :])
    assert re.search(r"qrelkit \d+\.\d+\.\d+ · \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", footer)
    command = shlex.split(re.search(r"<code[^>]*>(.*?)</code>", footer).group(1))
    given = [*toy_options(toy), "--out", str(toy / "report")]
    assert command[:2] == ["qrelkit", "report"]
    assert sorted(zip(command[2::2], command[3::2])) == sorted(zip(given[::2], given[1::2]))  # every option as given, shell-quoted


PROBE = """<script>
window.addEventListener("load", () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {key: e.dataset.summary, top: r.top, bottom: r.bottom,
    left: r.left, right: r.right, text: e.textContent}; };
  const probe = {width: innerWidth, height: innerHeight, scrollWidth: document.documentElement.scrollWidth,
    summary: [...document.querySelectorAll("#summary [data-summary]")].map(box),
    images: [...document.images].map((i) => (i.complete ? i.naturalWidth : -1)),
    figures: [...document.querySelectorAll("figcaption b")].map((b) => b.textContent)};
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(probe); document.body.append(out);
});
</script></body>"""


def chromium(tmp_path: Path, *args: str) -> str:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    command += ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900"]
    command += [f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120).stdout


def test_report_in_headless_chromium_shows_the_summary_in_the_first_viewport(report_dir, page, tmp_path):
    """At 1400×900 the summary's numbers lie inside the first screen, every figure decodes, nothing
    runs off the page sideways (the template has a 2,000-character line); the screenshot is kept."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (apt-get install -y chromium)")
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(page.replace("</body>", PROBE), encoding="utf-8")
    dom = chromium(tmp_path, "--dump-dom", probe_page.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, flags=re.S)
    assert found, f"Chromium did not run the page's load handler; DOM starts {dom[:300]!r}"
    probe = json.loads(html.unescape(found.group(1)))
    # --dump-dom lays the page out 1400 px wide but keeps ~140 px of the window's height for browser
    # chrome (innerHeight 757); the page has no height-dependent CSS, so positions are those of the
    # 1400×900 screenshot below, and a number inside the first screen ends above y = 900.
    assert probe["width"] == 1400 and "vh" not in page.split("</style>")[0]
    keys = {item["key"] for item in probe["summary"]}
    assert {"kappa", "tau-0", "tau-0-ci", "tau-1", "delta-0-0", "pairs", "queries", "warnings"} <= keys
    for item in probe["summary"]:
        assert 0 <= item["top"] and item["bottom"] <= 900, item
        assert 0 <= item["left"] and item["right"] <= 1400, item
    assert next(i["text"] for i in probe["summary"] if i["key"] == "kappa") == summary_values(page)["kappa"]
    assert len(probe["images"]) == 4 and all(w > 0 for w in probe["images"]), probe["images"]
    assert probe["figures"] == ["Figure 1.", "Figure 2.", "Figure 3.", "Figure 4."]
    assert probe["scrollWidth"] <= probe["width"]  # the long template wraps

    screenshot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={screenshot}", (report_dir / "report.html").as_uri())
    with Image.open(screenshot) as image:
        assert image.size == (1400, 900)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
        assert any(colour == (0x00, 0x72, 0xB2) for _, colour in colours)  # the summary box's border is on screen


def test_report_from_plain_files_needs_no_database(toy, tmp_path):
    invoke(
        "report",
        "--model-qrels",
        str(toy / "model.qrels"),
        "--reference-qrels",
        str(toy / "human.qrels"),
        "--runs",
        str(toy / "runs"),
        "--out",
        str(tmp_path / "r"),
        "--resamples",
        "0",
    )
    page = (tmp_path / "r" / "report.html").read_text()
    assert "model&#x27;s grades" in page and "<h2>Judge</h2>" not in page


@pytest.fixture(scope="module")
def dl19_db(dl19, tmp_path_factory) -> Path:
    """DL19 with UMBRELA's grades stored as a judge run's graded qrels."""
    db = tmp_path_factory.mktemp("dl19db") / "dl19.duckdb"
    with Store(db) as store:
        store.load_qrels(dl19 / "qrels.txt", name="nist")
    umbrela = read_qrels(dl19 / "umbrela-gpt4o.qrels")
    grades = {(q.qid, q.docid): q.grade for q in umbrela.entries}
    add_judge_run(db, umbrela, grades, {k: g + 0.25 for k, g in grades.items()}, [])
    return db


def test_dl19_judge_run_audit_reproduces_the_umbrela_numbers(dl19, dl19_db):
    payload = json.loads(
        invoke(
            "agree",
            "--judge-run",
            JUDGE_RUN_ID,
            "--db",
            str(dl19_db),
            "--reference-qrels",
            "nist",
            "--runs",
            str(dl19 / "runs"),
            "--json",
            "--resamples",
            "0",
            "--measure",
            "nDCG@10",
        )
    )
    assert round(payload["labels"]["cohen_kappa"], 4) == 0.3626
    assert round(payload["systems"]["nDCG@10"]["kendall_tau"], 4) == 0.9159


def test_dl19_readable_table(dl19):
    stdout = invoke(
        *umbrela_vs_nist(dl19),
        "--resamples",
        "20",
        "--group",
        "bert=bert|BERT",
    )
    assert re.search(r"^Cohen's κ +0\.3626 \[", stdout, re.M)  # a pipe gets plain columns, every cell whole
    assert re.search(r"^Kendall τ-b +0\.9159 \[", stdout, re.M)
    assert "Relative Δ toward each group" in stdout and "bert" in stdout


def test_dl19_report_with_maps_prints_the_readme_kappa(dl19, tmp_path):
    """UMBRELA and NIST both mapped onto 0–2 (3→2): κ 0.4308 and binarised κ 0.5244, the README's figures, as `agree` prints them."""
    options = [
        "--model-qrels",
        str(dl19 / "umbrela-gpt4o.qrels"),
        "--reference-qrels",
        str(dl19 / "qrels.txt"),
        "--runs",
        str(dl19 / "runs"),
    ]
    options += [
        "--measure",
        "nDCG@10",
        "--resamples",
        "0",
        "--map",
        "3:2,2:2,1:1,0:0",
        "--map-model",
        "3:2,2:2,1:1,0:0",
        "--rel-level",
        "2",
    ]
    invoke("report", *options, "--out", str(tmp_path / "dl19.html"))
    box = summary_values((tmp_path / "dl19.html").read_text(encoding="utf-8"))
    payload = json.loads(invoke("agree", *options, "--json"))
    assert box["kappa"] == f"{payload['labels']['cohen_kappa']:.4f}" == "0.4308"
    assert box["kappa-binary"] == "0.5244" and box["tau-0"] == "0.9159" and box["pairs"] == "9,260" and box["queries"] == "43"
    assert "warnings" not in box and payload["warnings"] == []  # both on 0–2, 9,260 pairs, 43 queries, 37 runs
