"""How tests/doc_examples.py runs a page's examples (its docstring has the rules): one data folder and
the shared runs a session, a fresh folder and a shell state a page, python blocks in-process."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_blocks import Example, Page, pages  # noqa: E402

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
        a --keep folder, once across sessions: taken again from there while its code and the
        program are the same)."""
        if name not in self.shared:
            example = next((e for page in pages(ROOT) for e in page.examples if e.marker("shared") == name), None)
            if example is None:
                raise ValueError(f"no example of the docs is marked `shared {name}`")
            folder = self.base / f"shared-{name}"
            saved = folder / ".doctest-printed"
            key = f"{program_fingerprint()}\n{example.code}"
            if saved.is_file() and saved.read_text(encoding="utf-8").startswith(key):
                printed = saved.read_text(encoding="utf-8")[len(key) :]
            else:
                shutil.rmtree(folder, ignore_errors=True)
                printed, _ = run_shell(example.code, fresh_folder(folder), self.environment(folder))
                saved.write_text(key + printed, encoding="utf-8")
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


def program_fingerprint() -> str:
    """The sha256 of qrelkit's sources and the example configs: a kept shared run is stale when it changes."""
    digest = hashlib.sha256()
    for path in sorted([*(ROOT / "qrelkit").rglob("*.py"), *(ROOT / "qrelkit").rglob("*.yaml"), *(ROOT / "configs").glob("*.yaml")]):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


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
