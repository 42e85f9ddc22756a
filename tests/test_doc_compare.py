"""The doc harness's own rules (tests/doc_examples.py): what a page may show for what was printed, and
what is a drift. Each case is a page line against a printed one, as a reader would judge them."""

from __future__ import annotations

import json

import pytest
from doc_blocks import read_page
from doc_compare import align, dump_json, mask, matching_node, numbers, regenerate, rewritten_json, unquoted

PRINTED = """umbrela-gpt4o ranks 37 runs with Kendall τ-b 0.916 [0.795, 1.000] on nDCG@10.
model qrels: the file /tmp/pytest-7/data/trec-dl-2019/umbrela-gpt4o.qrels

statistic    value
-----------  -----
exact        0.5790
Cohen's κ    0.3626 [0.297, 0.428]
judged 9260 pairs in 473.2s (19.6/s): ok 9260
"""


def test_names_with_digits_are_not_numbers_and_signed_ones_are():
    assert numbers("ICT-BERT2 bucket-1 trec-dl-2019 99183483b5b7338d runid4") == []
    assert numbers("Δτ −0.006 [-0.199, +0.187], 9,260 / 9,260 (38/5)") == ["−0.006", "-0.199", "+0.187", "9,260", "9,260", "38", "5"]


def test_paths_times_rates_and_sizes_are_masked():
    masked = mask("in 1289.8s (7.2/s), elapsed 7m56s, 197 MB, 5053.2 resamples/s at /home/you/x.duckdb and $D/qrels.txt")
    assert masked == "in ‹time› (‹rate›), elapsed ‹time›, ‹size›, ‹rate› at ‹path› and ‹path›"
    assert mask("9,260 / 9,260 pairs") == "9,260 / 9,260 pairs"


def test_the_page_showing_what_was_printed_matches_whatever_the_paths_and_times():
    shown = PRINTED.replace("/tmp/pytest-7/data/trec-dl-2019", "$D").replace("473.2s (19.6/s)", "1289.8s (7.2/s)")
    assert align(shown.splitlines(), PRINTED)[1] == []


@pytest.mark.parametrize(
    ("page_line", "printed_line"),
    [
        ("Cohen's κ    0.3626 [0.297, 0.428]", "Cohen's κ    0.3627 [0.297, 0.428]"),  # a number drifted
        ("Cohen's κ    0.3626 [0.297, 0.428]", "Cohen's κ    0.3626 [0.428, 0.297]"),  # the same numbers in another order
        ("exact        0.5790", "exact agreement 0.5790"),  # a word more
    ],
)
def test_a_drifted_line_fails_naming_both_lines(page_line, printed_line):
    problems = align(PRINTED.splitlines(), PRINTED.replace(page_line, printed_line))[1]
    assert len(problems) == 1 and page_line in problems[0] and printed_line in problems[0]


def test_a_line_the_page_leaves_out_fails_unless_an_elision_stands_for_it():
    lines = PRINTED.splitlines()
    cut = [line for line in lines if not line.startswith("exact")]
    assert align(cut, PRINTED)[1] != []
    elided = [("… and more" if line.startswith("exact") else line) for line in lines]
    assert align(elided, PRINTED)[1] == []
    assert align(lines[:2] + ["…"], PRINTED)[1] == []
    assert "printed more" in align(lines[:2], PRINTED)[1][0]


def test_a_page_may_round_but_not_change_a_number():
    assert align(["…", "Cohen's κ    0.36 [0.30, 0.43]", "…"], PRINTED)[1] == []
    assert align(["…", "Cohen's κ    0.37 [0.30, 0.43]", "…"], PRINTED)[1] != []


def test_a_trailing_note_on_a_shown_line_is_the_pages_own():
    shown = PRINTED.replace("ok 9260", "ok 9260          … on a loaded machine")
    assert align(shown.splitlines(), PRINTED)[1] == []


def test_update_writes_what_was_printed_keeping_the_pages_elisions_paths_and_notes():
    shown = [
        "umbrela-gpt4o ranks 37 runs with Kendall τ-b 0.900 [0.795, 1.000] on nDCG@10.",
        "…",
        "judged 9260 pairs in 99s (1/s): ok 9260",
    ]
    assert regenerate(shown, PRINTED) == [PRINTED.splitlines()[0], "…", PRINTED.splitlines()[-1]]
    kept = ["…", "model qrels: the file $D/umbrela-gpt4o.qrels      … where `data fetch` put it", "…"]
    assert regenerate(kept, PRINTED) == kept
    assert regenerate(["old layout │ 0.5790 │"], PRINTED) == PRINTED.rstrip("\n").splitlines()


def test_a_json_excerpt_matches_a_part_of_the_output_with_wildcards_and_rounding():
    printed = {"differences": [{"first": "a", "estimate": 0.015812, "ci": [-0.17701, 0.2087]}, {"first": "b", "estimate": 0.5}]}
    assert matching_node({"first": "a", "estimate": 0.0158, "ci": "...", "...": "..."}, printed)[2] == []
    problems = matching_node({"first": "a", "estimate": 0.0168}, printed)[2]
    assert problems and "0.0168" in problems[0]
    assert rewritten_json({"first": "a", "estimate": 0.0168, "ci": [-0.123, "..."]}, printed["differences"][0]) == {
        "first": "a",
        "estimate": 0.0158,
        "ci": [-0.177, "..."],
    }
    assert json.dumps(rewritten_json({"n": 1}, {"n": 2})) == '{"n": 2}'


def test_a_quote_fails_on_a_number_the_program_did_not_print():
    verdict = "the system rankings cannot be told apart (Δτ nDCG@10 +0.016, p = 0.62; Δτ AP(rel=2) −0.006, p = 0.92)"
    assert unquoted("cannot be told apart (Δτ nDCG@10 +0.016, p = 0.62)", verdict) == []
    assert unquoted("cannot be told apart (Δτ nDCG@10 +0.010, p = 0.74)", verdict) == ["+0.010", "0.74"]
    table = "| m | τ |\n|---|---:|\n| 5 | −0.006 |\n| 7 | 0.93 |"  # a table's labels are not quotes
    assert unquoted(table, verdict) == ["0.93"]


PAGE = """# A page

<!-- doctest: links trec-dl-2019/* -->
```
qrelkit agree --model-qrels a --reference-qrels b
```
```
printed
```

<!-- doctest: numbers from above -->
κ 0.36 here.

<!-- doctest: skip a synopsis -->
```
qrelkit agree [--json]
```

Its output, at length:

```
not the synopsis's
```

```python
print(1)
```

It prints:

```
1
```

```
qrelkit compare --format markdown
```

<!-- doctest: output -->
**verdict**
<!-- doctest: end -->
"""


def test_a_page_is_read_into_examples_their_outputs_markers_and_quotes(tmp_path):
    (tmp_path / "page.md").write_text(PAGE, encoding="utf-8")
    page = read_page(tmp_path / "page.md", tmp_path)
    assert [(e.kind, e.marker("skip")) for e in page.examples] == [
        ("command", None),
        ("command", "a synopsis"),
        ("python", None),
        ("command", None),
    ]
    agree, synopsis, python, compare = page.examples
    assert page.setting("links") == ["trec-dl-2019/*"] and agree.shown.lines == ["printed"]
    assert [q.text for q in agree.quotes] == ["κ 0.36 here."]
    assert synopsis.shown is not None  # a lead-in paragraph ending in ':' may stand between
    assert python.shown.lines == ["1"]
    assert compare.shown.info == "markdown" and compare.shown.lines == ["**verdict**"]


def test_an_unknown_marker_is_an_error_naming_its_line(tmp_path):
    (tmp_path / "page.md").write_text("<!-- doctest: skipp typo -->\n", encoding="utf-8")
    with pytest.raises(ValueError, match="page.md:1: an unknown doctest marker"):
        read_page(tmp_path / "page.md", tmp_path)


def test_a_rewritten_excerpt_is_laid_out_as_the_pages_lay_json_out():
    value = {"embedder": "minilm", "runs": {"a": {"FD@10": 0.5499, "n_ret": 430} | {f"k{i}": i for i in range(12)}}, "warnings": []}
    text = dump_json(value, width=60)
    assert json.loads(text) == value and max(map(len, text.splitlines())) <= 60
    assert text.startswith('{"embedder": "minilm",') and dump_json({"n": 1}) == '{"n": 1}'


def test_update_takes_in_lines_the_program_now_prints_inside_and_before_a_shown_stretch():
    shown = ["model qrels: the file $D/umbrela-gpt4o.qrels", "statistic    value", "…"]
    printed = "progress 10/10\n" + PRINTED.split("\n", 1)[1].replace("statistic", "a new line\nstatistic")
    assert regenerate(shown, printed) == [
        "progress 10/10",
        "model qrels: the file $D/umbrela-gpt4o.qrels",
        "",
        "a new line",
        "statistic    value",
        "…",
    ]
