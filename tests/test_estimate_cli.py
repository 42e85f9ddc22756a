"""`qrelkit assess plan | load` and `qrelkit estimate` as a user runs them: the issue's scripting forms
exactly as written, every bad input as one line with exit 2 and nothing half-stored, `--next`, and
the Python API."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import DL19
from hostile import one_error, snapshot
from hostile import qrelkit as cli

N_QUERIES, N_DOCS, N_RUNS = 6, 30, 5


@pytest.fixture(scope="module")
def track(tmp_path_factory) -> dict[str, Path]:
    """Human qrels (0-3), a judge that is off by a grade now and then and misses two pairs, runs."""
    folder = tmp_path_factory.mktemp("track")
    rng = np.random.default_rng(11)
    human, judge = [], []
    for q in range(N_QUERIES):
        for d in range(N_DOCS):
            grade = int(rng.choice(4, p=[0.45, 0.27, 0.17, 0.11]))
            human.append(f"q{q} 0 d{q}-{d} {grade}")
            if (q, d) not in ((0, 0), (1, 1)):
                judge.append(f"q{q} 0 d{q}-{d} {int(np.clip(grade + rng.choice([-1, 0, 0, 1]), 0, 3))}")
    (folder / "human-all.qrels").write_text("\n".join(human) + "\n")
    (folder / "judge.qrels").write_text("\n".join(judge) + "\n")
    runs = folder / "runs"
    runs.mkdir()
    grades = {line.split()[2]: int(line.split()[3]) for line in human}
    for r in range(N_RUNS):
        lines = []
        for q in range(N_QUERIES):
            docs = [f"d{q}-{d}" for d in range(N_DOCS)]
            score = np.array([grades[d] for d in docs]) * (0.3 + 0.2 * r) + rng.normal(0, 1, N_DOCS)
            for rank, i in enumerate(np.argsort(-score)[:20], start=1):
                lines.append(f"q{q} Q0 {docs[i]} {rank} {score[i]:.4f} run{r}")
        (runs / f"run{r}.run").write_text("\n".join(lines) + "\n")
    return {"folder": folder, "human": folder / "human-all.qrels", "judge": folder / "judge.qrels", "runs": runs}


def returned(plan_tsv: Path, truth: Path, out: Path, *, grade_of=None) -> Path:
    """What assessors return for the planned pairs: TREC qrels with the true grades."""
    grades = {(line.split()[0], line.split()[2]): line.split()[3] for line in truth.read_text().splitlines()}
    rows = [line.split("\t")[:2] for line in plan_tsv.read_text().splitlines()[1:]]
    out.write_text("".join(f"{q} 0 {d} {grade_of(q, d, grades[(q, d)]) if grade_of else grades[(q, d)]}\n" for q, d in rows))
    return out


def plan(track, tmp_path, *extra, budget=60, design="weighted") -> Path:
    db = tmp_path / "db.duckdb"
    done = cli("assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--budget", budget, "--seed", 0,
                   "--db", db, "--out", tmp_path / "pairs.tsv", "--design", design, *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return db


@pytest.mark.skipif(not (DL19 / "qrels.txt").exists(), reason="the shared DL19 data is absent (../shared/data/trec-dl-2019)")
def test_the_scripting_forms_work_exactly_as_written_on_dl19(tmp_path):
    judge, runs = DL19 / "umbrela-gpt4o.qrels", DL19 / "runs"
    db, pairs = tmp_path / "DB", tmp_path / "PAIRS.tsv"
    done = cli("assess", "plan", "--judge-qrels", judge, "--runs", runs, "--budget", "1000", "--seed", "0", "--db", db, "--out", pairs)
    assert done.returncode == 0, done.stderr
    lines = pairs.read_text().splitlines()
    assert lines[0].split("\t")[:2] == ["qid", "docid"]
    planned = [line.split("\t")[:2] for line in lines[1:]]
    assert 900 <= len(planned) <= 1100 and len({tuple(p) for p in planned}) == len(planned)  # Poisson: about the budget
    assert {line.split("\t")[3] for line in lines[1:]} == {"1"}
    human = returned(pairs, DL19 / "qrels.txt", tmp_path / "HUMAN.qrels")
    done = cli("estimate", "--db", db, "--judge-qrels", judge, "--human-qrels", human, "--runs", runs, "--measure", "nDCG@10", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    official = json.loads((DL19 / "official-nist.json").read_text())
    truth = {run: figures["ndcg_cut_10"] for run, figures in official.items()}
    assert set(found["runs"]) == set(truth)
    covered = 0
    for run, entry in found["runs"].items():
        low, high = entry["ci95"]
        assert low <= entry["estimate"] <= high
        covered += low <= truth[run] <= high
    assert covered >= 0.75 * len(truth), f"only {covered} of {len(truth)} intervals hold NIST's nDCG@10"
    errors = [found["runs"][run]["estimate"] - truth[run] for run in truth]
    assert float(np.sqrt(np.mean(np.square(errors)))) < 0.06  # judge-only: 0.058; this sample's estimate is far closer


def test_plan_load_estimate_and_the_python_api(track, tmp_path):
    import qrelkit

    db = plan(track, tmp_path)
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    before = len((tmp_path / "pairs.tsv").read_text().splitlines()) - 1
    loaded = qrelkit.assess_load(human, db=db)
    assert loaded.labels == before and loaded.qrels_set == "design-human"
    result = qrelkit.estimate(track["judge"], runs=track["runs"], measures=["nDCG@10", "AP"], db=db)
    frame = result.to_pandas()
    assert set(frame["estimator"]) == {"human", "judge", "ppi", "ppi++", "calibrated"}
    assert set(frame["measure"]) == {"nDCG@10", "AP"} and len(frame) == 2 * 5 * N_RUNS
    data = result.to_dict()
    assert data["human_labels"] == before and data["estimator"] == "ppi++"
    assert all(entry["ci95"][0] <= entry["estimate"] <= entry["ci95"][1] for entry in data["runs"].values())
    for fmt in ("plain", "tsv", "markdown", "latex"):
        done = cli("estimate", "--db", db, "--judge-qrels", track["judge"], "--runs", track["runs"], "--format", fmt)
        assert done.returncode == 0 and "run0" in done.stdout, (fmt, done.stderr)
    # the audit report of the same judge carries the estimate, with the same answer
    page = tmp_path / "report.html"
    done = cli("report", "--model-qrels", track["judge"], "--reference-qrels", track["human"], "--runs", track["runs"],
               "--db", db, "--out", page)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = page.read_text(encoding="utf-8")
    section = text[text.index("Estimates from the human sample of design") :]
    answer = qrelkit.estimate(track["judge"], runs=track["runs"], db=db)
    from qrelkit.commands.documents.estimate import lead

    assert html.escape(lead(answer)) in section and "id=estimates-" in text


def test_auto_plans_whole_queries_below_500_labels_and_weighted_pairs_from_there(track, tmp_path):
    from qrelkit.evaluate.choices import WEIGHTED_FROM

    assert WEIGHTED_FROM == 500  # the simulation's pick (choices.MEASURED_COVERAGE): weighted PPI++ from 500 labels
    done = cli(
        "assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--budget", 60, "--db", tmp_path / "db", "--json"
    )
    assert json.loads(done.stdout)["design"]["design"] == "queries"
    if (DL19 / "qrels.txt").exists():
        for budget, design in ((WEIGHTED_FROM - 1, "queries"), (WEIGHTED_FROM, "weighted")):
            done = cli("assess", "plan", "--judge-qrels", DL19 / "umbrela-gpt4o.qrels", "--runs", DL19 / "runs", "--budget", budget,
                       "--db", tmp_path / f"dl19-{budget}", "--json")  # fmt: skip
            assert json.loads(done.stdout)["design"]["design"] == design, budget


def test_the_estimate_says_what_ppi_plus_plus_is_under_each_design(track, tmp_path):
    """PPI++ over whole queries is ppi_py's tuned lambda on per-query values, over pairs a regression
    with an intercept per query: each estimate's note names the one it made."""
    for design, said, not_said in (
        ("queries", "over the sampled queries", "a_q"),
        ("weighted", "an intercept a_q", "over the sampled queries"),
    ):
        folder = tmp_path / design
        folder.mkdir()
        db = plan(track, folder, design=design)
        assert cli("assess", "load", returned(folder / "pairs.tsv", track["human"], folder / "human.qrels"), "--db", db).returncode == 0
        done = cli("estimate", "--db", db, "--judge-qrels", track["judge"], "--runs", track["runs"], "--estimator", "ppi++")
        assert done.returncode == 0, done.stderr
        note = next(line for line in done.stdout.splitlines() if line.startswith("estimator PPI++"))
        assert said in note and not_said not in note, (design, note)
        # a pair design's nDCG says how its ideal DCG was treated; whole queries have no ratio of estimates
        assert ("the ratio's second-order bias is subtracted" in note) == (design == "weighted"), (design, note)


def test_a_census_estimate_equals_evaluate_under_the_human_qrels(track, tmp_path):
    """Every pair of the pool labelled: each estimate is the measure under the human qrels exactly."""
    import qrelkit

    pool = sum(1 for _ in track["judge"].read_text().splitlines()) + 2  # the two pairs the judge missed are in the runs' top 10
    db = plan(track, tmp_path, budget=pool, design="auto")
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    result = qrelkit.estimate(track["judge"], human, track["runs"], measures=["nDCG@10"], db=db).to_dict()
    reference = qrelkit.evaluate(track["human"], track["runs"], ["nDCG@10"]).to_dict()["runs"]
    for run, entry in result["runs"].items():
        assert entry["estimate"] == pytest.approx(reference[run]["nDCG@10"], abs=1e-9)


@pytest.mark.parametrize("budget, message", [("100000", "larger than the pool"), ("0", "1 or more"), ("-5", "1 or more")])
def test_a_budget_the_pool_cannot_hold_is_refused(track, tmp_path, budget, message):
    done = cli("assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--budget", budget, "--db", tmp_path / "db")
    assert message in one_error(done, 2)
    assert not (tmp_path / "db").exists()


def test_grades_outside_the_scale_a_missing_grade_and_a_pair_outside_the_design_are_named_and_nothing_is_loaded(track, tmp_path):
    db = plan(track, tmp_path)
    good = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels").read_text().splitlines()
    before = snapshot(db)
    cases = {
        "scale": (good[:2] + [good[2].rsplit(" ", 1)[0] + " 7"] + good[3:], ":3: grade 7 of", "outside the design's scale 0-3"),
        "missing": (good[:4] + [good[4].rsplit(" ", 1)[0]] + good[5:], ":5: no grade for", ""),
        "outside": (good + ["q0 0 not-planned 2"], f":{len(good) + 1}: (q0, not-planned) is not a planned pair", ""),
        "unfinished": (good[:-1], "planned pair(s) of design 'design' have no grade", ""),
    }
    for name, (lines, first, second) in cases.items():
        path = tmp_path / f"{name}.qrels"
        path.write_text("\n".join(lines) + "\n")
        message = one_error(cli("assess", "load", path, "--db", db), 2)
        assert first in message and second in message and str(path) in message, (name, message)
        assert snapshot(db) == before, name  # nothing half-loaded


def test_a_changed_grade_and_a_design_changed_after_labels_were_loaded_are_refused_naming_both(track, tmp_path):
    db = plan(track, tmp_path)
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    assert cli("assess", "load", human, "--db", db).returncode == 0
    changed = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "changed.qrels", grade_of=lambda q, d, g: str((int(g) + 1) % 4))
    assert "is graded" in one_error(cli("assess", "load", changed, "--db", db), 2)
    before = snapshot(db)
    done = cli(
        "assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--budget", 90, "--design", "weighted", "--db", db
    )
    message = one_error(done, 2)
    assert "design 'design'" in message and "qrels set 'design-human'" in message and "--budget 90 where it was 60" in message
    assert snapshot(db) == before
    # the same plan again changes nothing and is not refused
    again = cli(
        "assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--budget", 60, "--design", "weighted", "--db", db
    )
    assert again.returncode == 0, again.stderr


def test_a_weighted_design_sized_by_another_rule_is_not_taken_for_the_same_plan(track, tmp_path):
    """A weighted design records how it sized its pairs; one planned by an earlier rule (here: its
    record without the counts' spread, as qrelkit planned before the ideal DCG's expected slope)
    draws other pairs from the same seed, so planning it again is refused once labels are loaded,
    naming the rule, and replaces it before."""
    import duckdb

    def as_planned_before(db: Path) -> None:
        con = duckdb.connect(str(db))
        con.execute("""UPDATE design_phases SET params = '{"floor": 0.2, "asked": "weighted"}' WHERE phase = 1""")
        con.close()

    given = ["--judge-qrels", track["judge"], "--runs", track["runs"], "--seed", 0, "--design", "weighted", "--budget", 60]
    db = plan(track, tmp_path)
    as_planned_before(db)
    again = cli("assess", "plan", *given, "--db", db, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "replaced"
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    assert cli("assess", "load", human, "--db", db).returncode == 0
    assert cli("assess", "plan", *given, "--db", db).returncode == 0  # the same rule: unchanged
    as_planned_before(db)
    before = snapshot(db)
    message = one_error(cli("assess", "plan", *given, "--db", db), 2)
    assert "sized by floor 0.2, count_spread 0.5 where they were sized by floor 0.2, no count_spread" in message
    assert "qrels set 'design-human'" in message
    assert snapshot(db) == before


def test_a_larger_budget_before_labels_extends_the_plan(track, tmp_path):
    db = plan(track, tmp_path)
    first = set(line.split("\t")[1] for line in (tmp_path / "pairs.tsv").read_text().splitlines()[1:])
    given = ["--judge-qrels", track["judge"], "--runs", track["runs"], "--seed", 0, "--design", "weighted", "--db", db]
    done = cli("assess", "plan", *given, "--budget", 90, "--out", tmp_path / "pairs.tsv", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "extended"
    second = set(line.split("\t")[1] for line in (tmp_path / "pairs.tsv").read_text().splitlines()[1:])
    assert first < second


def test_pool_pairs_without_a_judge_label_are_named_and_the_estimate_says_how_it_treated_them(track, tmp_path):
    db = plan(track, tmp_path)
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    done = cli("estimate", "--db", db, "--judge-qrels", track["judge"], "--human-qrels", human, "--runs", track["runs"], "--json")
    notes = " ".join(json.loads(done.stdout)["notes"])
    assert "2 pool pair(s) have no label from the judge" in notes and "(q0, d0-0)" in notes and "(q1, d1-1)" in notes
    assert "not relevant" in notes and "unbiased" in notes


def test_estimating_over_another_pool_is_refused_naming_the_design_and_the_pool(track, tmp_path):
    db = plan(track, tmp_path)
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    done = cli("estimate", "--db", db, "--judge-qrels", track["judge"], "--human-qrels", human, "--runs", track["runs"] / "run0.run")
    message = one_error(done, 2)
    assert "design 'design' was planned over a pool of" in message and "1 runs given make a pool of" in message


def test_next_adds_pairs_where_the_runs_are_undecided_and_the_estimate_uses_every_phase(track, tmp_path):
    db = plan(track, tmp_path)
    human = returned(tmp_path / "pairs.tsv", track["human"], tmp_path / "human.qrels")
    refused = cli("assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--next", 20, "--db", db)
    assert "no human labels loaded yet" in one_error(refused, 2)
    assert cli("assess", "load", human, "--db", db).returncode == 0
    done = cli("assess", "plan", "--judge-qrels", track["judge"], "--runs", track["runs"], "--next", 20, "--db", db,
                   "--out", tmp_path / "next.tsv", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout)
    assert added["status"] == "next" and added["phase"] == 2 and added["expected_labels"] == pytest.approx(20)
    first = {tuple(line.split("\t")[:2]) for line in (tmp_path / "pairs.tsv").read_text().splitlines()[1:]}
    new = {tuple(line.split("\t")[:2]) for line in (tmp_path / "next.tsv").read_text().splitlines()[1:]}
    assert new and not (new & first)
    more = returned(tmp_path / "next.tsv", track["human"], tmp_path / "more.qrels")
    assert cli("assess", "load", more, "--db", db).returncode == 0
    done = cli("estimate", "--db", db, "--judge-qrels", track["judge"], "--runs", track["runs"], "--json")
    assert json.loads(done.stdout)["human_labels"] == len(first) + len(new)
