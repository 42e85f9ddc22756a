"""The intervals as users see them: `agree --json` on DL19 with UMBRELA's qrels gives BCa intervals
that contain their estimates and, with `--interval percentile`, exactly the intervals qrelkit gave
before BCa; every output names its method and resamples; a note is never dropped; a resample count
beyond the limit is one line and exit 2."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hostile import one_error, qrelkit
from tracks import umbrela_vs_nist
from typer.testing import CliRunner

from qrelkit.cli import app
from qrelkit.evaluate.bootstrap import IntervalEstimate

runner = CliRunner()
DEMO = Path(__file__).resolve().parents[1] / "qrelkit" / "data" / "demo"

# `qrelkit agree --json --groups groups.tsv:family` on DL19 (UMBRELA vs NIST, 1000 resamples, seed 0),
# printed by main at 4c3b449, before BCa: the percentile intervals, which must not move by a digit.
PERCENTILE_BEFORE_BCA = {
    "nDCG@10": {
        "kendall_tau_ci95": [0.8138138138138138, 0.9459459459459459],
        "spearman_rho_ci95": [0.9471194879089616, 0.9924193930772879],
        "pearson_r_ci95": [0.9740009025544162, 0.994888694187384],
        "tau_ap_ci95": [0.6617319591064754, 0.9276793603435199],
    },
    "AP(rel=2)": {
        "kendall_tau_ci95": [0.6276276276276276, 0.9099099099099099],
        "spearman_rho_ci95": [0.8083748221906117, 0.9826932195353248],
        "pearson_r_ci95": [0.854629354377678, 0.9868450482100065],
        "tau_ap_ci95": [0.5435384939755427, 0.8867221708229123],
    },
}
BIAS_PERCENTILE_BEFORE_BCA = {
    "nDCG@10": {
        "model_ci95": [11.494755173936676, 26.305146411658942],
        "reference_ci95": [15.042632680604282, 33.60308987697033],
        "difference_ci95": [-10.140996452801344, -1.3948693501264555],
    },
    "AP(rel=2)": {
        "model_ci95": [22.40682967633034, 61.06831453533657],
        "reference_ci95": [17.53630730965084, 57.83915036929942],
        "difference_ci95": [-13.179704392693063, 19.482959885676],
    },
}


def agree_json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def dl19_args(dl19) -> list[str]:
    return [*umbrela_vs_nist(dl19), "--groups", f"{dl19 / 'groups.tsv'}:family"]


def test_dl19_bca_intervals_contain_their_estimates(dl19_args):
    payload = agree_json(*dl19_args, "--interval", "bca")  # BCa since issue 37 on request (the default is the jackknife)
    assert payload["bootstrap"]["method"] == "BCa" and payload["bootstrap"]["resamples"] == 1000
    checked = 0
    for entry in payload["systems"].values():
        for name in ("kendall_tau", "spearman_rho", "pearson_r", "tau_ap"):
            low, high = entry[f"{name}_ci95"]
            assert low <= entry[name] <= high, name
            checked += 1
        assert entry["notes"] == {}
    labels = payload["labels"]
    for name in ("cohen_kappa", "cohen_kappa_linear", "cohen_kappa_quadratic"):
        low, high = labels[f"{name}_ci95"]
        assert low <= labels[name] <= high and high - low < 0.25, name  # κ 0.3626 [0.30, 0.43]
        checked += 1
    for measure, bias in payload["bias"]["neural"].items():
        for side in ("model", "reference", "difference"):
            low, high = bias[f"{side}_ci95"]
            assert low <= bias[side] <= high, (measure, side)
            checked += 1
    assert checked == 8 + 3 + 6
    assert round(payload["systems"]["nDCG@10"]["kendall_tau"], 4) == 0.9159 and round(labels["cohen_kappa"], 4) == 0.3626


def test_dl19_percentile_on_request_equals_the_intervals_of_before_to_the_last_digit(dl19_args):
    payload = agree_json(*dl19_args, "--interval", "percentile")
    assert payload["bootstrap"]["method"] == "percentile"
    for measure, expected in PERCENTILE_BEFORE_BCA.items():
        assert {key: payload["systems"][measure][key] for key in expected} == expected
    for measure, expected in BIAS_PERCENTILE_BEFORE_BCA.items():
        assert {key: payload["bias"]["neural"][measure][key] for key in expected} == expected


def test_dl19_terminal_and_report_name_the_method_and_resamples(dl19_args, dl19, tmp_path):
    table = runner.invoke(app, [*dl19_args, "--interval", "bca"], catch_exceptions=False).stdout
    assert "System rankings [95% BCa CI, 1000 resamples]" in table and "Label agreement on the shared pairs [95% BCa CI" in table
    assert re.search(r"^Cohen's κ +0\.3626 \[0\.301, 0\.429\]$", table, re.M)
    table = runner.invoke(app, [*dl19_args, "--interval", "percentile", "--resamples", "200"], catch_exceptions=False).stdout
    assert "System rankings [95% percentile CI, 200 resamples]" in table
    page = tmp_path / "audit.html"
    report = ["report", *dl19_args[1:], "--interval", "bca", "--out", str(page)]
    assert runner.invoke(app, report, catch_exceptions=False).exit_code == 0
    assert "95% BCa bootstrap over 43 queries, 1000 resamples, seed 0." in page.read_text(encoding="utf-8")


def test_a_note_is_never_dropped_from_tables_json_or_the_report(dl19_args, tmp_path):
    """An interval that carries a note (here put in by hand) shows a '*' and the note in the table,
    the note in the JSON and in the report's summary."""
    from qrelkit import agree
    from qrelkit.commands.documents.audit import agree as agree_document
    from qrelkit.commands.documents.audit import page, systems_table
    from qrelkit.report.page import render_page
    from qrelkit.report.render import plain

    result = agree(dl19_args[2], dl19_args[4], [dl19_args[6]], resamples=50)
    corr = result.systems["nDCG@10"]
    outside = IntervalEstimate(0.95, 0.99, "BCa", 0.95, 50, "the estimate 0.9159 lies below its 95% BCa interval [0.95, 0.99]")
    corr = replace(corr, intervals={**corr.intervals, "kendall_tau": outside}, ci95={**corr.ci95, "kendall_tau": outside.interval})
    result = replace(result, systems={**result.systems, "nDCG@10": corr})
    rendered = plain(agree_document(result, None))
    assert "* Kendall τ-b, nDCG@10: the estimate 0.9159 lies below its 95% BCa interval [0.95, 0.99]" in rendered
    assert any("0.9159 [0.950, 0.990]*" in cell for row in systems_table(result).text_rows() for cell in row)
    assert result.to_dict()["systems"]["nDCG@10"]["notes"] == {"kendall_tau": outside.note}
    html = render_page(page(result, None, None))
    assert "lies below its 95% BCa interval" in html[html.index("<section class=summary") : html.index("</section>")]


def test_fd_names_its_method_and_explains_a_note(tmp_path):
    from qrelkit.commands.documents.scoring import fd
    from qrelkit.evaluate.fd import FDSettings, fd_of_runs
    from qrelkit.io import Qrel, Qrels, Run, RunEntry

    rng = np.random.default_rng(3)  # one item per query in 8 dimensions: resampling duplicates items, FD jumps
    qids = [f"q{i}" for i in range(10)]
    qrels = Qrels("q", tuple(Qrel(q, f"{q}-rel", 2) for q in qids))
    run = Run("r", tuple(RunEntry(q, f"{q}-ret", 1, 1.0) for q in qids))
    vectors = {f"{q}-rel": rng.normal(0, 1, 8) for q in qids} | {f"{q}-ret": rng.normal(0, 1, 8) for q in qids}
    report = fd_of_runs(qrels, [run], vectors, FDSettings(ks=(1,), resamples=200))
    payload = report.to_dict()
    assert payload["interval"] == {"method": "BCa", "level": 0.95, "resamples": 200, "seed": 0}
    note = payload["runs"]["r"]["FD@1_note"]
    assert "strongly biased" in note and any(note in warning for warning in payload["warnings"])
    document = fd(report, SimpleNamespace(plot=None, plot_metric=None))
    assert list(document.tables()[0].header)[3] == "FD@1 95% BCa CI (200 resamples)"
    assert any("*: an interval with a note" in note.text for note in document.notes)


def test_fd_urr_null_says_why_in_table_json_and_a_warning():
    result = runner.invoke(
        app,
        ["fd", "--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs" / "good.run"), "--docs", str(DEMO / "passages.jsonl")]
        + ["--urr", "--k", "2", "--resamples", "0", "--json"],
        catch_exceptions=False,
    )
    payload = json.loads(result.stdout)
    entry = payload["runs"]["good"]
    assert entry["URR-FD@2"] is None and "retrieves only judged ones" in entry["URR-FD@2_reason"]
    assert payload["warnings"] == [f"URR-FD@2 is null for 1 of 1 runs (good): {entry['URR-FD@2_reason']}"]
    assert "warning: URR-FD@2 is null for 1 of 1 runs" in " ".join(result.stderr.split())
    table = runner.invoke(
        app,
        ["fd", "--qrels", str(DEMO / "qrels.txt"), "--runs", str(DEMO / "runs" / "good.run"), "--docs", str(DEMO / "passages.jsonl")]
        + ["--urr", "--k", "2", "--resamples", "0"],
        catch_exceptions=False,
    )
    assert "retrieves only judged ones" in " ".join(table.stdout.split())


@pytest.mark.parametrize(
    "command",
    [
        ["agree", "--model-qrels", "{qrels}", "--reference-qrels", "{qrels}", "--runs", "{runs}"],
        ["fd", "--qrels", "{qrels}", "--runs", "{runs}", "--docs", "{docs}"],
        ["resample", "evaluate", "--qrels", "{qrels}", "--interpolation-runs", "{runs}", "--extrapolation-runs", "{runs}"],
    ],
    ids=["agree", "fd", "resample-evaluate"],
)
def test_a_resample_count_beyond_the_limit_is_one_line_and_exit_2(command):
    values = {"qrels": DEMO / "qrels.txt", "runs": DEMO / "runs", "docs": DEMO / "passages.jsonl"}
    args = [str(a).format(**values) for a in command]
    message = one_error(qrelkit(*args, "--resamples", "100000000", cwd=Path(__file__).resolve().parents[1]), 2)
    assert "--resamples 100000000: at most 100,000 bootstrap resamples" in message


def test_an_unknown_interval_method_is_one_line_and_exit_2():
    done = qrelkit(
        "agree",
        "--model-qrels",
        DEMO / "qrels.txt",
        "--reference-qrels",
        DEMO / "qrels.txt",
        "--runs",
        DEMO / "runs",
        "--interval",
        "basic",
        cwd=Path(__file__).resolve().parents[1],
    )
    assert "--interval 'basic': choose jackknife (the default), bca, percentile or subsampling" in one_error(done, 2)
