"""Every example of README.md and docs/*.md, run as a reader runs it, its output compared with the page.

    python tests/doc_examples.py --check [PAGE ...]    # what tests/test_doc_examples.py checks, without pytest
    python tests/doc_examples.py --update [PAGE ...]   # rewrite what the pages show from what the examples print
    ... --keep DIR       # run in DIR and keep it: the shared MiniLM job (minutes) runs once across calls
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

How it runs
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
import ast
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_blocks import Example, Page, pages  # noqa: E402
from doc_compare import (  # noqa: E402
    align,
    dump_json,
    json_in,
    matching_node,
    regenerate,
    rewritten_json,
    unquoted,
)

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = sorted(p.stem for p in (ROOT / "qrelkit" / "data" / "bundles").glob("*.yaml"))
SLOW = os.environ.get("QRELKIT_DOCS_SLOW") == "1"
HOME = "/home/you"  # where a printed path under the example's folder is said to be


def shared_data() -> Path:
    from conftest import SHARED_DATA

    return SHARED_DATA


@dataclass
class Outcome:
    printed: str = ""
    skipped: str | None = None
    failed: str | None = None


class Skip(Exception):
    pass


@dataclass
class Session:
    """What the pages share: one data folder, the shared runs, the tools on PATH."""

    base: Path
    _data: Path | None = None
    shared: dict[str, tuple[str, Path]] = field(default_factory=dict)

    def data(self) -> Path:
        if self._data is None:
            self._data = self.base / "data"
            for name in BUNDLES:
                if (shared_data() / name).is_dir():
                    done = subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "qrelkit.cli",
                            "data",
                            "fetch",
                            name,
                            "--to",
                            str(self._data),
                            "--mirror",
                            str(shared_data()),
                        ],
                        env={**os.environ, "PYTHONPATH": str(ROOT)},
                        capture_output=True,
                        text=True,
                    )
                    if done.returncode:
                        raise RuntimeError(f"could not fetch {name} from {shared_data()}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        return self._data

    def shared_run(self, name: str) -> tuple[str, Path]:
        """What the example marked `shared NAME` printed, and its folder: run once a session (and, in
        a --keep folder, once across sessions: taken again from there while its code is the same)."""
        if name not in self.shared:
            example = next((e for page in pages(ROOT) for e in page.examples if e.marker("shared") == name), None)
            if example is None:
                raise ValueError(f"no example of the docs is marked `shared {name}`")
            folder = self.base / f"shared-{name}"
            saved = folder / ".doctest-printed"
            if saved.is_file() and saved.read_text(encoding="utf-8").startswith(example.code):
                printed = saved.read_text(encoding="utf-8")[len(example.code) :]
            else:
                shutil.rmtree(folder, ignore_errors=True)
                printed, _ = run_shell(example.code, fresh_folder(folder), self.environment(folder))
                saved.write_text(example.code + printed, encoding="utf-8")
            self.shared[name] = (printed, folder)
        return self.shared[name]

    def tools(self) -> Path:
        folder = self.base / "bin"
        if not folder.is_dir():
            folder.mkdir(parents=True)
            (folder / "qrelkit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m qrelkit.cli "$@"\n')
            (folder / "qrelkit").chmod(0o755)
            (folder / "python").symlink_to(sys.executable)
        return folder

    def environment(self, folder: Path) -> dict[str, str]:
        data = self.data()
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "QRELKIT_SNAPSHOTS")}
        return {
            **keep,
            "PATH": f"{self.tools()}:{os.environ['PATH']}",
            "HOME": str(folder / "home"),
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "Agg",
            "QRELKIT_DATA": str(data),
            "QRELKIT_MIRROR": str(shared_data()),
            "QRELKIT_PROGRESS_SECONDS": "3600",
            "D": str(data / "trec-dl-2019"),
            "E": str(data / "extrapolate-eval"),
        }


def run_shell(code: str, folder: Path, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A command block run by bash in ``folder``: what it printed (stdout and stderr in one stream)
    and the variables it left set."""
    state = folder / ".doctest-state"
    script = f"set -ea\ncd {shlex.quote(str(folder))}\n{code}\nenv -0 > {shlex.quote(str(state))}\n"
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=3600)
    printed = done.stdout.decode("utf-8", "replace")
    if done.returncode:
        raise RuntimeError(f"exit code {done.returncode}; it printed:\n{printed[-4000:]}")
    variables = {}
    for item in state.read_bytes().split(b"\0"):
        key, _, value = item.decode("utf-8", "replace").partition("=")
        if key and key not in ("PWD", "OLDPWD", "SHLVL", "_") and key.isidentifier():
            variables[key] = value
    state.unlink()
    return printed, variables


def fresh_folder(folder: Path) -> Path:
    """A clone's shape: its configs/ (a copy: a job's database path is relative to it) and docs/figures/."""
    folder.mkdir(parents=True)
    shutil.copytree(ROOT / "configs", folder / "configs")
    (folder / "docs" / "figures").mkdir(parents=True)
    (folder / "home").mkdir()
    return folder


def needed_bundles(page: Page, upto: int) -> set[str]:
    """The bundles an example needs: named in it or an example above it, in the config files they
    name, by `$D`/`$E`, or by the page's links."""
    text = "\n".join(e.code for e in page.examples[:upto] if e.marker("skip") is None or e.number == upto)
    for config in set(re.findall(r"configs/[\w.-]+\.yaml", text)):
        if (ROOT / config).is_file():
            text += (ROOT / config).read_text(encoding="utf-8")
    names = {b for b in BUNDLES if b in text}
    names |= {"trec-dl-2019"} if re.search(r"\$\{?D\b", text) else set()
    names |= {"extrapolate-eval"} if re.search(r"\$\{?E\b", text) else set()
    for links in page.setting("links"):
        names |= {entry.split("/")[0] for entry in links.split()}
    return names


class PageRun:
    """One page's examples, run in order in one folder."""

    def __init__(self, page: Page, session: Session):
        self.page, self.session = page, session
        shutil.rmtree(session.base / re.sub(r"\W", "_", page.name), ignore_errors=True)
        self.folder = fresh_folder(session.base / re.sub(r"\W", "_", page.name))
        self.env = session.environment(self.folder)
        self.namespace: dict = {"__name__": "__main__"}
        self.outcomes: dict[int, Outcome] = {}
        self.linked = False

    def again(self) -> None:
        """The page's examples to run once more, in the same folder, from a fresh namespace."""
        self.outcomes, self.namespace = {}, {"__name__": "__main__"}

    def outcome(self, number: int) -> Outcome:
        for example in self.page.examples[:number]:
            if example.number not in self.outcomes:
                self.outcomes[example.number] = self._run(example)
        return self.outcomes[number]

    def _run(self, example: Example) -> Outcome:
        reason = example.marker("skip")
        if reason is not None:
            return Outcome(skipped=f"{example.id}: {reason or 'marked skip'}")
        slow = example.marker("slow")
        if slow is not None and not SLOW:
            return Outcome(skipped=f"{example.id}: slow ({slow}); QRELKIT_DOCS_SLOW=1 runs it")
        missing = [b for b in sorted(needed_bundles(self.page, example.number)) if not self._at_hand(b)]
        if missing:
            return Outcome(skipped=f"{example.id}: {', '.join(missing)} not at hand (not in {shared_data()})")
        try:
            self._link()
            uses = example.marker("uses")
            if uses:
                self._copy_shared(uses)
            shared = example.marker("shared")
            if shared:
                printed = self._shared_run(shared)
            elif example.kind == "python":
                if "notebook" not in self.page.settings:
                    self.namespace = {"__name__": "__main__"}
                printed = self._python(example)
            else:
                printed = self._shell(example.code)
            return Outcome(printed=self._readable(printed))
        except Skip as skip:
            return Outcome(skipped=str(skip))
        except Exception as error:  # noqa: BLE001 (the test reports any failure of an example)
            return Outcome(failed=f"{example.id} failed: {error}")

    def _at_hand(self, name: str) -> bool:
        return (self.session.data() / name).is_dir() or (shared_data() / name).is_dir()

    def _link(self) -> None:
        if self.linked:
            return
        self.linked = True
        for links in self.page.setting("links"):
            for entry in links.split():
                name, _, inside = entry.partition("/")
                source = self.session.data() / name if (self.session.data() / name).is_dir() else shared_data() / name
                targets = sorted(source.iterdir()) if inside == "*" else [source]
                for target in targets:
                    if not target.name.startswith("."):
                        (self.folder / target.name).symlink_to(target)

    def _shell(self, code: str) -> str:
        printed, variables = run_shell(code, self.folder, self.env)
        self.env.update(variables)
        return printed

    def shell(self, code: str) -> str:
        """A shell command run in this page's folder, in its shell state; what it printed."""
        return self._readable(self._shell(code))

    def _python(self, example: Example) -> str:
        tree = ast.parse(example.code)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        out = io.StringIO()
        try:
            os.environ.update({k: v for k, v in self.env.items() if k.startswith(("QRELKIT_", "MPL"))})
            os.chdir(self.folder)
            with contextlib.redirect_stdout(out):
                exec(compile(tree, example.id, "exec"), self.namespace)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), example.id, "eval"), self.namespace)
                    if value is not None and example.shown is not None:
                        print(value if isinstance(value, str) else repr(value))
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return out.getvalue()

    def _shared_run(self, name: str) -> str:
        """What the shared run printed, as if here; its files copied here."""
        printed, folder = self.session.shared_run(name)
        self._copy_shared(name)
        return printed.replace(str(folder), str(self.folder))

    def _copy_shared(self, name: str) -> None:
        _, source = self.session.shared_run(name)
        for path in source.iterdir():
            if path.is_file() and not path.name.startswith(".") and not (self.folder / path.name).exists():
                shutil.copy2(path, self.folder / path.name)

    def _readable(self, printed: str) -> str:
        """Paths under this folder and the data folder as a reader's (the masks hide them anyway)."""
        data = self.session.data()
        for folder, name in ((data / "trec-dl-2019", "$D"), (data / "extrapolate-eval", "$E")):
            printed = printed.replace(str(folder), name)
        printed = printed.replace(str(data), f"{HOME}/.local/share/qrelkit")
        return printed.replace(str(self.folder), f"{HOME}/qrelkit")

    def shown_output(self, example: Example) -> str:
        """What the page's shown block is compared with: what the example printed, or the text of
        the page it wrote (FILE#ID)."""
        outcome = self.outcome(example.number)
        source = example.shown.source if example.shown else None
        if not source:
            return outcome.printed
        file, _, until = source.partition("#")
        if not (self.folder / file).is_file():
            raise RuntimeError(f"{example.id} wrote no {file}")
        return self._readable(page_text(self.folder / file, until))

    def quote_output(self, source: str, after: int) -> str:
        """What the quote's source printed: the example above, or a command run now."""
        if source in ("above", "below"):
            outcome = self.outcome(after)
            if outcome.skipped or outcome.failed:
                raise Skip(outcome.skipped or outcome.failed or "")
            return outcome.printed
        if not source.startswith(":"):
            raise ValueError(f"{self.page.name}: a quote's source is 'above' or ': COMMAND', not {source!r}")
        self.outcome(after)
        return self._shell(source[1:].strip())


BLOCK_TAGS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "section", "table", "ul", "ol", "figure", "details", "summary"}


class _PageText(HTMLParser):
    """The text of an HTML page's body, a line per block element, up to the end of one element."""

    def __init__(self, until: str):
        super().__init__()
        self.until, self.lines, self.line, self.depth, self.done, self.skip = until, [], [], None, False, 0

    def _break(self) -> None:
        if "".join(self.line).strip():
            self.lines.append(re.sub(r"\s+", " ", "".join(self.line)).strip())
        self.line = []

    def handle_starttag(self, tag, attrs):
        if self.done:
            return
        self.skip += tag in ("style", "script")
        if self.depth is not None and tag not in ("br", "img", "meta", "link", "input", "hr"):
            self.depth += 1
        if dict(attrs).get("id") == self.until:
            self.depth = 1
        if tag in BLOCK_TAGS:
            self._break()

    def handle_endtag(self, tag):
        if self.done:
            return
        self.skip -= tag in ("style", "script")
        if tag in BLOCK_TAGS:
            self._break()
        if self.depth is not None:
            self.depth -= 1
            if self.depth == 0:
                self._break()
                self.done = True

    def handle_data(self, data):
        if not self.done and not self.skip:
            self.line.append(data)


def page_text(path: Path, until: str) -> str:
    """The text a reader sees on an HTML page down to the end of the element with id ``until``."""
    parser = _PageText(until)
    text = path.read_text(encoding="utf-8")
    parser.feed(text[text.find("<body") :] if "<body" in text else text)
    parser._break()
    return "\n".join(parser.lines) + "\n"


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
    return align(shown.lines, printed)[1]


def _parsed_json(text: str):
    import json

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
