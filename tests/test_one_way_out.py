"""One way out (issue 42): in a pipe or a file every name and number is whole, in every format; a
comparison of many judges leads with the ranking; the comparison page shows the answer and the table
in the first screen of a 1280×800 browser."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED_DATA

DL19 = SHARED_DATA / "trec-dl-2019"
METHODS = SHARED_DATA / "judge-methods-dl19"
CHROMIUM = Path("/usr/bin/chromium")
needs_dl19 = pytest.mark.skipif(not (DL19 / "qrels.txt").is_file(), reason=f"needs the TREC DL 2019 data at {DL19}")


def qrelkit(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command line as a user's shell runs it, its stdout a pipe."""
    done = subprocess.run([sys.executable, "-m", "qrelkit.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)
    assert done.returncode == 0, done.stderr
    return done


def run_names() -> list[str]:
    """DL19's 37 run names (the file names less `.run`), two of them sharing the 8-character prefix
    `ICT-CKNR` that a squeezed table once showed for both."""
    return sorted(path.name.removesuffix(".run") for path in (DL19 / "runs").iterdir())


def words(text: str) -> set[str]:
    """Every token between separators a table uses (spaces, tabs, pipes, commas, parentheses)."""
    return set(re.split(r"[\s|,()]+", text))


@needs_dl19
def test_evaluate_as_tsv_names_every_run_whole_and_reads_as_numbers():
    done = qrelkit("evaluate", "--qrels", DL19 / "qrels.txt", "--runs", DL19 / "runs", "--measure", "nDCG@10", "--format", "tsv")
    rows = list(csv.reader(io.StringIO(done.stdout), delimiter="\t"))
    assert rows[0] == ["run", "nDCG@10"]
    assert sorted(row[0] for row in rows[1:]) == run_names()
    assert all(re.fullmatch(r"\d\.\d{4}", row[1]) for row in rows[1:])
    assert "…" not in done.stdout


@needs_dl19
def test_agree_as_markdown_keeps_every_name_and_number_whole():
    done = qrelkit(
        "agree", "--model-qrels", DL19 / "umbrela-gpt4o.qrels", "--reference-qrels", DL19 / "qrels.txt", "--runs", DL19 / "runs",
        "--format", "markdown", "--group", "neural=bert|BERT",
    )  # fmt: skip
    assert done.stdout.startswith("**umbrela-gpt4o ranks 37 runs as trec-dl-2019/qrels.txt does with Kendall τ-b 0.916")
    assert "| Cohen's κ | 0.3626 \\[0.297, 0.428\\] |" in done.stdout and "…" not in done.stdout


@needs_dl19
def test_nrg_compare_into_a_file_names_every_run_whole(tmp_path):
    out = tmp_path / "nrg.txt"
    with out.open("w") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "qrelkit.cli", "nrg", "--qrels", str(DL19 / "qrels.txt"), "--runs", str(DL19 / "runs"), "--compare"],
            stdout=sink, stderr=subprocess.PIPE, text=True, timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "…" not in text and "┃" not in text
    assert set(run_names()) <= words(text)


def test_probe_list_in_a_pipe_shows_every_id_whole():
    from qrelkit.probes import builtin_probes

    done = qrelkit("probe", "--list")
    assert "…" not in done.stdout
    assert {probe.id for probe in builtin_probes()} <= words(done.stdout)


@needs_dl19
@pytest.mark.parametrize("output_format", ["plain", "markdown", "latex", "tsv"])
def test_evaluate_in_every_text_format_names_every_dl19_run_whole(output_format):
    done = qrelkit("evaluate", "--qrels", DL19 / "qrels.txt", "--runs", DL19 / "runs", "--format", output_format)
    shown = done.stdout.replace("\\_", "_")  # LaTeX escapes the underscore
    assert "…" not in shown and set(run_names()) <= words(shown)


# -- many judges: the ranking first -------------------------------------------------------------------


@pytest.fixture(scope="module")
def twelve(tmp_path_factory) -> dict[str, object]:
    """The 12-method comparison of docs/benchmark-judges.md, its terminal text (a pipe), JSON and page."""
    if not (METHODS / "binary.txt").is_file() or not (DL19 / "qrels.txt").is_file():
        pytest.skip(f"needs {METHODS} and {DL19}")
    folder = tmp_path_factory.mktemp("twelve")
    args = ["compare", "--judge", METHODS, "--reference-qrels", DL19 / "qrels.txt", "--runs", DL19 / "runs"]
    args += ["--measure", "nDCG@10", "--judge-measure", "Compat(p=0.9)", "--reference-decimals", "4", "--permutations", "200"]
    text = qrelkit(*args, "--html", folder / "page.html", cwd=folder).stdout
    payload = json.loads(qrelkit(*args, "--json", cwd=folder).stdout)
    return {"text": text, "json": payload, "page": folder / "page.html", "folder": folder}


def test_twelve_judges_lead_with_the_best_and_its_tau_then_the_sorted_table(twelve):
    payload = twelve["json"]
    tau = {j["name"]: next(iter(j["audit"]["systems"].values()))["kendall_tau"] for j in payload["judges"]}
    top = max(tau.values())
    best = [name for name in tau if tau[name] == top]  # on DL19 two methods tie: umbrela-zeroshot and preferences
    lines = twelve["text"].splitlines()
    head = "\n".join(lines[:15])
    assert lines[0].startswith("Best of 12 judges against trec-dl-2019/qrels.txt: ") and f"Kendall τ-b {top:.3f}" in lines[0]
    assert all(name in lines[0] for name in best)
    table = lines.index(next(line for line in lines if line.startswith("Judges against")))
    assert table < 15 and "Judges against" in head
    rows = [line.split()[0] for line in lines[table + 3 : table + 15]]
    assert sorted(rows) == sorted(tau) and [tau[name] for name in rows] == sorted(tau.values(), reverse=True)
    assert "are indistinguishable on" not in twelve["text"]  # the 66 pairwise sentences are folded away
    assert "Every two judges compared: (--verbose shows it)" in twelve["text"]


def test_twelve_judges_with_verbose_print_every_pairwise_sentence(twelve):
    args = ["compare", "--judge", METHODS, "--reference-qrels", DL19 / "qrels.txt", "--runs", DL19 / "runs"]
    args += ["--measure", "nDCG@10", "--judge-measure", "Compat(p=0.9)", "--reference-decimals", "4", "--permutations", "200"]
    text = qrelkit(*args, "--verbose", cwd=twelve["folder"]).stdout
    assert text.count(" vs ") >= 66  # a sentence for every two of the twelve judges


PROBE = """<script>
window.addEventListener("load", () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const rows = [...document.querySelectorAll("#judges tbody tr")].map(box);
  const probe = {width: innerWidth, scrollWidth: document.documentElement.scrollWidth, verdict: box(document.getElementById("verdict")),
    table: box(document.getElementById("judges")), rows: rows};
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(probe); document.body.append(out);
});
</script></body>"""


def test_the_comparison_page_shows_the_verdict_and_the_table_in_the_first_screen(twelve, tmp_path):
    """In a 1280×800 window: the verdict and every row of the judges' table lie inside the first screen,
    and nothing runs off the page sideways (a wide table scrolls in its own box)."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (apt-get install -y chromium)")
    page = Path(twelve["page"]).read_text(encoding="utf-8")
    probed = tmp_path / "probe.html"
    probed.write_text(page.replace("</body>", PROBE), encoding="utf-8")
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    command += ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,800"]
    command += [f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000"]
    dom = subprocess.run([*command, "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, flags=re.S)
    assert found, f"Chromium did not run the page's load handler; DOM starts {dom[:300]!r}"
    import html as markup

    probe = json.loads(markup.unescape(found.group(1)))
    assert probe["width"] == 1280 and probe["scrollWidth"] <= probe["width"]
    assert len(probe["rows"]) == 12
    for box in [probe["verdict"], probe["table"], *probe["rows"]]:
        assert 0 <= box["top"] and box["bottom"] <= 800, box  # the first screen
        assert 0 <= box["left"] and box["right"] <= 1280, box
    screenshot = tmp_path / "page.png"
    subprocess.run([*command, f"--screenshot={screenshot}", Path(twelve["page"]).as_uri()], capture_output=True, timeout=120)
    from PIL import Image

    with Image.open(screenshot) as image:
        assert image.size == (1280, 800)
