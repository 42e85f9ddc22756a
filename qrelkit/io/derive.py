"""The rules that make a bundle's files from public files (`qrelkit data fetch`), each a plain
function ``rule(inputs, options, out)``: input paths in the manifest's order, the manifest's
options, the path to write. Each rule is stated in its docstring, deterministic, and tested on the
public files themselves where they are at hand (tests/test_bundles_real.py): the bytes a rule
writes are what the manifest's sha256 was computed from.

Text is read as UTF-8 lines (gzip inflated on the way, within the caps of `qrelkit.io.limits`)
and written with `\\n` line ends.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from qrelkit.errors import InputFormatError, LineProblem, QrelkitError
from qrelkit.io.lines import ProblemLog, iter_lines, raise_if_problems

Rule = Callable[[list[Path], dict[str, Any], Path], None]


class DeriveError(QrelkitError):
    """A public file that does not have what a rule needs from it (the file changed, or is not the one named)."""


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    problems = ProblemLog()
    yield from iter_lines(path, problems)
    raise_if_problems(problems)


def _qrels_pairs(path: Path) -> Iterator[tuple[str, str]]:
    """(qid, docid) of each `qid iter docid grade` line, in file order."""
    for number, text in _lines(path):
        cols = text.split()
        if len(cols) != 4:
            raise InputFormatError.single(path, number, f"expected 4 columns (qid iter docid grade), found {len(cols)}")
        yield cols[0], cols[2]


def _write_lines(out: Path, lines: Iterable[str]) -> None:
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(line + "\n" for line in lines)


def copy(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """The source's bytes, unchanged."""
    shutil.copyfile(inputs[0], out)


def judged_topics(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """The lines of a `qid<TAB>text` topics file (inputs[0]) whose qid the qrels (inputs[1]) judge,
    in the topics file's order."""
    judged = {qid for qid, _ in _qrels_pairs(inputs[1])}
    _write_lines(out, (text for _, text in _lines(inputs[0]) if text.split("\t", 1)[0] in judged))


def _judged_docids(qrels: Path) -> list[str]:
    return list(dict.fromkeys(docid for _, docid in _qrels_pairs(qrels)))


def _write_passages(out: Path, docids: list[str], texts: dict[str, str], where: str) -> None:
    missing = [d for d in docids if d not in texts]
    if missing:
        raise DeriveError(f"{where} has no text for {len(missing)} judged passage(s), e.g. {', '.join(missing[:3])}")
    # json.dumps' defaults (ASCII escapes, ", " and ": "): the bytes the manifest's sha256 is of
    _write_lines(out, (json.dumps({"docid": d, "text": texts[d]}) for d in docids))


def judged_passages(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """`{"docid", "text"}` JSON lines for each passage the qrels (inputs[1]) judge, in order of first
    judgment, the text taken from field ``text_field`` of a JSONL with `docid` (inputs[0])."""
    docids = _judged_docids(inputs[1])
    wanted, field = set(docids), options.get("text_field", "text")
    texts: dict[str, str] = {}
    for number, line in _lines(inputs[0]):
        try:
            record = json.loads(line)
            docid, text = str(record["docid"]), record[field]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputFormatError.single(inputs[0], number, f"expected JSON with `docid` and `{field}` ({exc})") from None
        if docid in wanted:
            texts[docid] = str(text)
    _write_passages(out, docids, texts, str(inputs[0]))


def irds_judged_passages(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """As `judged_passages`, the text read through ir_datasets from the corpus ``dataset``
    (ir_datasets downloads it on first use and checks it against its own md5)."""
    from qrelkit.io.irds import read_irds_texts

    docids = _judged_docids(inputs[0])
    _write_passages(out, docids, read_irds_texts(options["dataset"], docids), f"irds:{options['dataset']}")


def judged_run_top(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """The lines of a TREC run (inputs[0], gzip or not) at rank <= ``depth`` whose (qid, docid) the
    qrels (inputs[1]) judge, in the run's order, the six columns joined by one space. A run that
    numbers its ranks from 0 is renumbered from 1 first (rank + 1), so `depth` means the same
    positions in every run."""
    depth = int(options["depth"])
    judged = set(_qrels_pairs(inputs[1]))
    rows: list[tuple[int, list[str]]] = []
    for number, text in _lines(inputs[0]):
        cols = text.split()
        if len(cols) != 6 or not cols[3].lstrip("-").isdigit():
            raise InputFormatError.single(inputs[0], number, "expected `qid Q0 docid rank score tag`")
        rows.append((int(cols[3]), cols))
    shift = 1 if rows and min(rank for rank, _ in rows) == 0 else 0
    kept = (
        " ".join([*cols[:3], str(rank + shift), *cols[4:]]) for rank, cols in rows if rank + shift <= depth and (cols[0], cols[2]) in judged
    )
    _write_lines(out, kept)


_SUMMARY = re.compile(r'"summary \(passages-eval\)"\n\t```\n(.*?)\n\t```', re.S)


def nist_figures(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """NIST's per-run figures from a trec-browser results page (inputs[0]): for each run in
    ``runs``, its passages-eval summary's `ndcg_cut_10`, and `map` and `recip_rank` (NIST's
    passage evaluation counts grade 2 and up as relevant: `map_rel2`, `recip_rank_rel2`), as
    JSON with one-space indents and sorted keys, no final newline."""
    text = inputs[0].read_text(encoding="utf-8")
    figures: dict[str, dict[str, float]] = {}
    for block in re.split(r"^#### ", text, flags=re.M)[1:]:
        name = block.split("\n", 1)[0].strip()
        found = _SUMMARY.search(block)
        if found:
            values = {parts[0]: parts[2] for parts in (line.split() for line in found.group(1).splitlines()) if len(parts) == 3}
            figures[name] = {
                "map_rel2": float(values["map"]),
                "ndcg_cut_10": float(values["ndcg_cut_10"]),
                "recip_rank_rel2": float(values["recip_rank"]),
            }
    missing = [run for run in options["runs"] if run not in figures]
    if missing:
        raise DeriveError(f"{inputs[0]} has no passages-eval summary for {', '.join(missing)}")
    out.write_text(json.dumps({run: figures[run] for run in options["runs"]}, indent=1, sort_keys=True), encoding="utf-8")


def run_groups(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """`run<TAB>group<TAB>family` with a header, one row per run of ``families`` sorted by name: the
    group is the run's `Participant` on a trec-browser runs page (inputs[0]), the family the
    manifest's."""
    text = inputs[0].read_text(encoding="utf-8")
    groups = {}
    for block in re.split(r"^#### ", text, flags=re.M)[1:]:
        found = re.search(r"\*\*Participant:\*\* (\S+)", block)
        if found:
            groups[block.split("\n", 1)[0].strip()] = found.group(1)
    families: dict[str, str] = options["families"]
    missing = [run for run in families if run not in groups]
    if missing:
        raise DeriveError(f"{inputs[0]} names no participant for {', '.join(missing)}")
    _write_lines(out, ["run\tgroup\tfamily", *(f"{run}\t{groups[run]}\t{families[run]}" for run in sorted(families))])


def sorted_qids(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """The distinct qids of a qrels file, sorted as strings, one per line."""
    _write_lines(out, sorted({qid for qid, _ in _qrels_pairs(inputs[0])}))


def pooled_ids(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """The distinct docids of a qrels file in order of first judgment, one per line."""
    _write_lines(out, _judged_docids(inputs[0]))


def parquet_topics(inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """JSON lines of the topics in a parquet table (inputs[0]) that the qrels (inputs[1]) judge, in
    order of first judgment: `qid` from column ``qid``, `text` from column ``text``, and each field
    of ``fields`` (name: column)."""
    import pyarrow.parquet as pq

    columns = {"qid": options["qid"], "text": options["text"], **options.get("fields", {})}
    try:
        table = pq.read_table(inputs[0])
    except Exception as exc:  # pyarrow raises its own error types for a file that is not parquet
        raise DeriveError(f"{inputs[0]} cannot be read as parquet: {exc}") from None
    absent = sorted(set(columns.values()) - set(table.column_names))
    if absent:
        raise DeriveError(f"{inputs[0]} has no column {', '.join(absent)} (it has {', '.join(table.column_names)})")
    rows = {str(row[columns["qid"]]): row for row in table.select(list(dict.fromkeys(columns.values()))).to_pylist()}
    qids = list(dict.fromkeys(qid for qid, _ in _qrels_pairs(inputs[1])))
    missing = [q for q in qids if q not in rows]
    if missing:
        raise DeriveError(f"{inputs[0]} has no topic {', '.join(missing[:3])} that the qrels judge")
    _write_lines(out, (json.dumps({name: str(rows[q][column] or "") for name, column in columns.items()}) for q in qids))


RULES: dict[str, Rule] = {
    "copy": copy,
    "judged-topics": judged_topics,
    "judged-passages": judged_passages,
    "irds-judged-passages": irds_judged_passages,
    "judged-run-top": judged_run_top,
    "nist-figures": nist_figures,
    "run-groups": run_groups,
    "sorted-qids": sorted_qids,
    "pooled-ids": pooled_ids,
    "parquet-topics": parquet_topics,
}


def apply_rule(name: str, inputs: list[Path], options: dict[str, Any], out: Path) -> None:
    """Run rule ``name``; an input that does not fit it is a DeriveError naming the file."""
    try:
        RULES[name](inputs, options, out)
    except InputFormatError as exc:
        first = exc.problems[0] if exc.problems else LineProblem(str(inputs[0]), 0, str(exc))
        raise DeriveError(f"{first}: the public file does not have the form the rule {name!r} reads") from None
