"""Every example of README.md and docs/*.md, run as a reader runs it, its output compared with the page.

    python tests/doc_examples.py --check [PAGE ...]    # what tests/test_doc_examples.py checks, without pytest
    python tests/doc_examples.py --update [PAGE ...]   # rewrite what the pages show from what the examples print
    ... --keep DIR       # run in DIR and keep it: the shared MiniLM job (minutes) runs again only when qrelkit changed
(docs/doc-examples.md says the same for whoever writes a page.)

What is an example (tests/doc_blocks.py)
- A command block: a fenced block (no language, or bash/sh) with a line that runs `qrelkit` (after any
  `VAR=value`); its other lines (`D=$(qrelkit data path trec-dl-2019)`, `\\` continuations, comments,
  `> file`, a `for` loop) are plain shell. A ```python block. Other blocks (YAML, `pip install`) are not run.
- What it printed: the fenced block right after it (no language, `text` or `json`; only blank lines, or
  one short paragraph ending in ':', between them), a fenced block after `<!-- doctest: output -->`,
  a region of Markdown between `<!-- doctest: output -->` and `<!-- doctest: end -->` (the output of
  `--format markdown`), or, after `<!-- doctest: output from PAGE.html#ID -->`, the text of the HTML
  page the example wrote, down to the end of element ID (a line per block element).
- Markers (HTML comments, invisible on the rendered page). Just above a block:
  `skip REASON`: not run (a synopsis, a GPU, an API key); the test skips saying REASON.
  `slow REASON`: run only with QRELKIT_DOCS_SLOW=1 (too slow for CI: REASON).
  `shared NAME`: run once a session (the 9,260-pair MiniLM job), in a folder of its own; its output,
  and its folder's files copied in, serve this page and every example marked `uses NAME`.
  Anywhere on a page: `links trec-dl-2019/* judge-methods-dl19` puts those entries of the data folder
  in the page's folder (for pages whose commands say `qrels.txt`, `runs/`); `notebook`: its python
  blocks share one namespace. Before a paragraph or table: `numbers from above` (every number in it
  appears, possibly rounded, in what the example above printed), `numbers from below` (the next example
  that shows its output), `numbers from: CMD` (what the shell command CMD prints, run at that point).
  A table's header row and first column are labels, not quotes; so are code spans.

How it runs (tests/doc_runner.py)
- A page's examples run in order, in one fresh folder (a clone's `configs/` copied in, an empty
  `docs/figures/`), so a `judge` and then an `agree` on its database work as on the page. Shell state
  carries from one command block to the next (variables set, e.g. `D`); `$D` and `$E` start as the
  trec-dl-2019 and extrapolate-eval folders, as a shell that ran README example 2 has them. A python
  block runs in the page's folder, in a namespace of its own (a reader may copy it alone); a shown
  output of a python block is what it printed and the value of its last expression, as a notebook shows.
- The data: one data folder a session ($QRELKIT_DATA), filled by `qrelkit data fetch NAME --mirror
  SHARED` from the shared data (tests/conftest.py's SHARED_DATA; a copy of a data folder is a mirror)
  for every bundle there; a page's own `qrelkit data fetch` fetches from it too (QRELKIT_MIRROR). An
  example needs the bundles named in it or in an example above it that is not skipped (and in the
  config files they name; `$D` and `$E` name theirs), and the page's links: when one is not in the
  shared data, the test skips and says which. `qrelkit` on PATH is this checkout's; the output is
  piped (the plain format), stdout and stderr in one stream, progress lines only at the end.

How it compares (tests/doc_compare.py)
- Masks, on both sides: absolute, home and `$VAR/` paths -> ‹path›; dates and clock times; durations
  (`12.5s`, `7m56s`, `3 min`), rates (`7.2/s`, `70 pairs/s`), sizes in bytes (`197 MB`), pids; and the
  run-time columns of a table (headed `time s`, `pairs/s`, `elapsed`).
- Line by line, blank lines aside: a shown line matches a printed one when their numbers are equal in
  order (a shown number may be rounded: 0.92 matches 0.9159) and their words are the same. `… note`
  at the end of a shown line (two spaces before) is the page's own note; a line that starts with `…`
  elides any number of printed lines. Without elisions the page shows all of it. A name with digits
  (`ICT-BERT2`, `bucket-1`) holds no number.
- A ```json block (or one that parses as JSON) is an excerpt: each key it shows must be printed with
  that value (numbers possibly rounded); "..." stands for any value, the rest of a list, or more keys;
  the excerpt may be one object inside the output (one difference of many).
- A quote's numbers must each be among the numbers printed (possibly rounded): a weaker check than a
  shown block's, in any order, which catches a number that drifted.
- A failure names the page, the example and the first shown line that differs, beside the printed one.

--update reruns the examples and rewrites each shown block that differs from what was printed, keeping
the page's elisions, and a line that differs from the page's only in a path as the page has it (its
readable path, its note); printed paths under the example's folder or the data folder are
written as `/home/you/qrelkit/...`, `$D/...`, `$E/...`. Quotes are not rewritten: a quote that fails
is reported, and the sentence is fixed by hand from the printed output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_blocks import Example, pages  # noqa: E402
from doc_compare import align, dump_json, json_in, matching_node, regenerate, rewritten_json, unquoted  # noqa: E402
from doc_runner import ROOT, PageRun, Session  # noqa: E402


def problems(example: Example, printed: str) -> list[str]:
    """What differs between what the page shows the example printed and what it printed."""
    shown = example.shown
    if shown is None:
        return []
    text = "\n".join(shown.lines)
    parsed = _parsed_json(text)
    if parsed is not None:
        where, _, found = matching_node(parsed, json_in(printed))
        return [f"the JSON at {where or 'the top'}: {p}" for p in found]
    return align(shown.lines, printed, shown.first)[1]


def _parsed_json(text: str):
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def rewritten(example: Example, printed: str) -> list[str]:
    """The shown lines as --update writes them."""
    assert example.shown is not None
    parsed = _parsed_json("\n".join(example.shown.lines))
    if parsed is not None:
        _, node, _ = matching_node(parsed, json_in(printed))
        return dump_json(rewritten_json(parsed, node)).splitlines()
    return regenerate(example.shown.lines, printed)


def quote_problems(run: PageRun, example: Example) -> list[str]:
    found = []
    for quote in example.quotes:
        missing = unquoted(quote.text, run.quote_output(quote.source, example.number))
        if missing:
            found.append(f"line {quote.line + 1}: {', '.join(missing)} not printed by {quote.source}:\n    {quote.text[:300]}")
    return found


def update(paths: list[str], check: bool, keep: str | None) -> int:
    selected = [p for p in pages(ROOT) if not paths or p.name in paths or str(p.path) in paths]
    status = 0
    with contextlib.ExitStack() as stack:
        base = keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="doc-examples-"))
        Path(base).mkdir(parents=True, exist_ok=True)
        session = Session(Path(base).resolve())
        for page in selected:
            run = PageRun(page, session)
            lines = page.path.read_text(encoding="utf-8").splitlines()
            replacements: list[tuple[int, int, list[str]]] = []
            for example in page.examples:
                outcome = run.outcome(example.number)
                label = f"{example.id} ({example.kind}, line {example.first})"
                if outcome.skipped:
                    print(f"skipped {label}: {outcome.skipped}")
                    continue
                if outcome.failed:
                    print(f"FAILED {label}: {outcome.failed}")
                    status = 1
                    continue
                printed = run.shown_output(example)
                found = problems(example, printed) if example.shown else []
                for problem in found + quote_problems(run, example):
                    print(f"{'differs' if check else 'rewrites'} {label}: {problem}")
                    status = 1 if check else status
                if example.shown and found and not check:
                    shown = example.shown
                    replacements.append((shown.first, shown.first + len(shown.lines), rewritten(example, printed)))
                print(f"ran {label}")
            for start, end, new in sorted(replacements, reverse=True):
                lines[start:end] = new
            if replacements:
                page.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
                print(f"rewrote {len(replacements)} block(s) of {page.name}")
    return status


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the docs' examples; --update rewrites what they show.")
    parser.add_argument("pages", nargs="*", help="README.md, docs/audit.md, ... (default: all)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--update", action="store_true")
    what.add_argument("--check", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep it; a shared run found there is not run again")
    args = parser.parse_args()
    raise SystemExit(update(args.pages, args.check, args.keep))


if __name__ == "__main__":
    main()
