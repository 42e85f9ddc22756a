"""The layers of DESIGN.md, checked on the source: data flows one way, SQL lives in storage/,
judges do not lean on each other, and the command line only wires."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qrelkit"
# What each layer must never import (DESIGN.md's table), as qrelkit subpackages.
FORBIDDEN = {
    "io": {"storage", "prompts", "probes", "embed", "judges", "jobs", "evaluate", "report", "commands", "cli"},
    "storage": {"prompts", "probes", "embed", "judges", "jobs", "evaluate", "report", "commands", "cli"},
    "prompts": {"storage", "embed", "judges", "jobs", "evaluate", "report", "commands", "cli"},
    "probes": {"storage", "prompts", "embed", "judges", "jobs", "evaluate", "report", "commands", "cli"},
    "embed": {"storage", "judges", "jobs", "evaluate", "report", "commands", "cli"},
    "judges": {"storage", "jobs", "evaluate", "report", "commands", "cli"},
    "jobs": {"evaluate", "report", "commands", "cli"},
    "evaluate": {"storage", "jobs", "judges", "embed", "commands", "report", "prompts", "probes", "cli"},
    "report": {"storage", "jobs", "judges", "embed", "commands", "cli"},
    "commands": {"cli"},
}
# A judge backend may use these shared judge modules, and no other backend.
JUDGE_SHARED = {"base", "registry", "scoring", "chat", "http", "batch_api"}
SQL = re.compile(
    r"\b(SELECT\s+.+\s+FROM|INSERT\s+(OR\s+\w+\s+)?INTO|DELETE\s+FROM|UPDATE\s+\w+\s+SET|CREATE\s+TABLE|ALTER\s+TABLE)\b", re.I | re.S
)


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def layer_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else Path(parts[0]).stem


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, including those inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


def test_every_layer_imports_only_what_design_allows():
    problems = []
    for path in modules():
        layer = FORBIDDEN.get(layer_of(path))
        if layer is None:
            continue
        for line, module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "qrelkit" and len(parts) > 1 and parts[1] in layer:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {layer_of(path)} imports {module}")
    assert not problems, "forbidden imports:\n" + "\n".join(problems)


def test_no_sql_outside_storage():
    problems = []
    for path in modules():
        if layer_of(path) == "storage":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value[:60]!r}")
    assert not problems, "SQL outside qrelkit/storage:\n" + "\n".join(problems)


def test_judges_never_import_another_backend():
    backends = {p.stem for p in (PACKAGE / "judges").glob("*.py")} - JUDGE_SHARED - {"__init__"}
    problems = []
    for path in (PACKAGE / "judges").glob("*.py"):
        for line, module in imported_modules(path):
            parts = module.split(".")
            if parts[:2] == ["qrelkit", "judges"] and len(parts) > 2 and parts[2] in backends and parts[2] != path.stem:
                problems.append(f"judges/{path.name}:{line}: imports {module}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_command_line_only_wires(path):
    """No computation in cli/: nothing from evaluate, storage or jobs but what a command function
    returns, and no module above a few hundred lines."""
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 350, f"{path.name} has {len(text.splitlines())} lines"
    for line, module in imported_modules(path):
        parts = module.split(".")
        assert not (parts[0] == "qrelkit" and len(parts) > 1 and parts[1] in {"storage", "evaluate", "embed"}), (
            f"cli/{path.name}:{line} imports {module}: call a function of qrelkit.commands instead"
        )
    tree = ast.parse(text)
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.ListComp, ast.DictComp, ast.SetComp)), f"cli/{path.name}:{node.lineno}: computation in the CLI"


# What parses the command line's option strings, and so never belongs in evaluate/: the CLI's
# libraries, the command layer, and the parsers of option strings (commands/requests.py).
CLI_PARSING_MODULES = ("typer", "click", "qrelkit.cli", "qrelkit.commands")
OPTION_PARSERS = {"split_groups_spec", "parse_grade_map", "parse_group_patterns", "groups_from_spec", "prior_sets_from_spec"}


def test_evaluate_imports_no_command_line_parsing():
    """evaluate/ sees parsed, typed values: it imports neither the CLI's libraries nor the request
    layer, and no parser of an option string (`FILE:COLUMN`, `3:2,2:2`, `NAME=REGEX`, `--prior`)."""
    problems = []
    for path in sorted((PACKAGE / "evaluate").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                names = {a.name for a in node.names} if isinstance(node, ast.ImportFrom) else set()
                if any(m == p or m.startswith(p + ".") for m in modules for p in CLI_PARSING_MODULES) or names & OPTION_PARSERS:
                    problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: imports {', '.join(modules)} {sorted(names)}")
            elif isinstance(node, ast.FunctionDef) and node.name in OPTION_PARSERS:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: defines {node.name}")
    assert not problems, "option parsing in evaluate/:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_command_line_merges_no_aliases_and_validates_nothing(path):
    """cli/ only wires flags to requests: no hidden option (an alias to merge), and no check of a
    value raised there (requests and commands check; one message for the CLI and the API)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "hidden":
            raise AssertionError(f"cli/{path.name}:{node.value.lineno}: a hidden option")
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and getattr(node.exc.func, "id", "") == "QrelkitError":
            raise AssertionError(f"cli/{path.name}:{node.lineno}: raises QrelkitError: check the value in the request instead")


def test_no_function_in_commands_is_over_60_lines():
    long = []
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 60:
                long.append(f"commands/{path.name}:{node.lineno}: {node.name} has {node.end_lineno - node.lineno + 1} lines")
    assert not long, "\n".join(long)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_by_place() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> qrelkit modules it imports at its top, module -> those it imports inside a
    function); imports for type checking alone are left out: they never run."""
    known = {_module_name(p) for p in modules()}

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    top: dict[str, set[str]] = {m: set() for m in known}
    local: dict[str, set[str]] = {m: set() for m in known}
    for path in modules():
        this = _module_name(path)

        def visit(node: ast.AST, in_function: bool, this: str = this) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.Import | ast.ImportFrom):
                    names = [a.name for a in child.names] if isinstance(child, ast.Import) else []
                    if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                        names = [child.module] + [f"{child.module}.{a.name}" for a in child.names]
                    for name in names:
                        target = resolve(name) if name.startswith("qrelkit") else None
                        if target is not None and target != this:
                            (local if inner else top)[this].add(target)
                visit(child, inner)

        visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return top, local


def test_no_import_circle_hides_inside_a_function():
    """A function-local import is for a heavy or optional module, never to hide a circle: the
    module it imports must not import (at its top, directly or through others) the importer."""
    top, local = _imports_by_place()

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for target in top.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    circles = [
        f"{m} imports {t} inside a function, and {t} imports {m}" for m in sorted(local) for t in sorted(local[m]) if m in reaches(t)
    ]
    assert not circles, "\n".join(circles)
