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
# A judge backend may use these shared judge modules (wire formats among them: `chat_completions`, the
# OpenAI chat request and response lines that the `openai` judge and the `vllm` judge's batch route
# both write and read) and its own helper (`vllm_batch`, the `vllm` judge's runner), no other backend.
JUDGE_SHARED = {"base", "registry", "scoring", "chat", "chat_completions", "http", "bodies", "batch_api", "vllm_batch", "startup"}
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


# -- the import graph, every import counted (at the top, inside a function, for type checking) --------

# The order of the parts, lowest first: a module imports only from its own rank or below (and
# FORBIDDEN still keeps apart parts of one rank).
RANK = {
    "errors": 0,
    "machine": 0,
    "version": 0,
    "io": 1,
    "storage": 2,
    "prompts": 2,
    "probes": 2,
    "evaluate": 2,
    "embed": 3,
    "judges": 3,
    "jobs": 4,
    "report": 5,
    "commands": 6,
    "cli": 7,
    "api": 7,
    "__init__": 8,
}


def _all_imports() -> dict[str, set[str]]:
    """module -> the qrelkit modules it imports anywhere (type-only imports included). Importing a
    name from a package counts as importing the submodule of that name when there is one (the
    package's own `__init__` is not the dependency then), else the package."""
    known = {_module_name(p) for p in modules()}

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in known}
    for path in modules():
        this = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("qrelkit")]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("qrelkit"):
                submodules = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known]
                targets = submodules if len(submodules) == len(node.names) else [node.module, *submodules]
            for target in filter(None, map(resolve, targets)):
                if target != this:
                    edges[this].add(target)
    return edges


def _rank(module: str) -> int:
    parts = module.split(".")
    return RANK["__init__"] if parts == ["qrelkit"] else RANK[parts[1]]


def test_no_module_imports_a_higher_layer():
    """io → storage → jobs(prompts, judges, embed) → evaluate → report → commands → cli and the API:
    nothing reaches up, not even for a type (the package's face, `qrelkit`, is the top: `__version__`
    lives in `qrelkit.version`)."""
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(_all_imports().items())
        for target in sorted(targets)
        if _rank(target) > _rank(module)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_circle_between_modules():
    """No two modules reach each other through imports of any kind (Tarjan's strongly connected
    components of the whole graph)."""
    edges = _all_imports()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(edges[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                circles.append(sorted([module, *component]))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_no_function_local_import_of_a_module_that_imports_back():
    """A function-local import is for a heavy or optional module, never to hide a circle: the module
    it imports must not reach the importer by any import (at its top or inside a function)."""
    top, local = _imports_by_place()
    every = {m: top[m] | local[m] for m in top}

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for target in every.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    circles = [
        f"{m} imports {t} inside a function, and {t} reaches {m}" for m in sorted(local) for t in sorted(local[m]) if m in reaches(t)
    ]
    assert not circles, "\n".join(circles)


# -- one declaration per use case, one door per thing -------------------------------------------------

# The two places a use case's values are passed on as a whole: the generic command's callback (typer
# hands it the parsed options) and the generic Python function (its caller's arguments); both build
# the request at once. (And a rich `Console` method overridden with rich's own signature.)
GENERIC = {("cli/command.py", "command"), ("api.py", "call"), ("cli/base.py", "render_str")}  # rich's own method


def test_no_keyword_hop_between_a_flag_and_its_use_case():
    """No `**options` parameter in the command line, the use cases or the Python API but the two
    generic builders: a flag's value goes into its request's field and from there to the use case,
    never through a function that passes on keywords it does not name."""
    hops = []
    for path in [PACKAGE / "api.py", *sorted((PACKAGE / "cli").glob("*.py")), *sorted((PACKAGE / "commands").rglob("*.py"))]:
        where = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.args.kwarg is not None
                and (where, node.name) not in GENERIC
            ):
                hops.append(f"{where}:{node.lineno}: {node.name}(**{node.args.kwarg.arg})")
    assert not hops, "keyword hops:\n" + "\n".join(hops)


def _calls(name: str) -> list[str]:
    """Where a function or class ``name`` is called in the package (file:line)."""
    found = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                if called == name:
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_one_judge_factory_for_every_route():
    """Every judge is built by `JudgeFactory` (the job's route, the Batch API, Ray actors, a sweep's
    cells): a judge config is validated only where a factory is resolved, and no route builds a judge
    from raw options itself (`create_judge` is the notebook's door, used by no route)."""
    assert [c.split(":")[0] for c in _calls("make_config")] == ["judges/registry.py"]
    assert _calls("create_judge") == []
    assert {c.split(":")[0] for c in _calls("JudgeFactory")} == set(), "a factory is made by JudgeFactory.resolve alone"
    assert {c.split(":")[0] for c in _calls("resolve")} >= {"jobs/plan.py", "jobs/batch_api_job.py"}


def _names_used(path: Path) -> set[str]:
    """Every name a file refers to: names, attributes, imported names, and the words of its strings
    (a lazy import's `module:attribute`, an entry point); a function's own name where it is defined
    is no use of it."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return set(re.findall(r"\w+", text))
    used: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.alias):
            used.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used |= set(re.findall(r"\w+", node.value))
    return used


def test_no_function_in_the_package_serves_only_the_tests():
    """A module-level function of qrelkit that nothing in the package, the benchmarks, the docs or the
    project file uses, but a test does, is a second door kept alive for the tests: tests go through
    the path users take."""
    root = PACKAGE.parent
    outside = [
        *sorted((root / "benchmarks").glob("*.py")),
        *sorted((root / "docs").glob("*.md")),
        root / "pyproject.toml",
        root / "README.md",
    ]
    in_tests = set().union(*map(_names_used, sorted((root / "tests").glob("*.py"))))
    used_outside = set().union(*map(_names_used, outside))
    by_file = {path: _names_used(path) for path in modules()}
    users: dict[str, int] = {}
    for names in by_file.values():
        for name in names:
            users[name] = users.get(name, 0) + 1
    lonely = []
    for path, names in by_file.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef) or node.name not in in_tests or node.name in used_outside:
                continue
            elsewhere = users.get(node.name, 0) - (node.name in names)
            if not elsewhere and not _used_in_own_module(path, node.name):
                lonely.append(f"{path.relative_to(root)}:{node.lineno}: {node.name}")
    assert not lonely, "functions only the tests call:\n" + "\n".join(lonely)


def _used_in_own_module(path: Path, name: str) -> bool:
    """Whether the module refers to ``name`` anywhere but its definition (a helper its other
    functions call, a name in its `__all__`)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.Attribute) and node.attr == name:
            return True
    return False


def test_reference_map_is_written_on_at_most_four_lines_and_the_resample_default_once():
    """A flag's value has one name from the request to the evaluate layer (`--map` is the request's
    `reference_map`, then `GradeMaps.reference`), and the default of 1000 resamples is one constant
    every resampling reads (a default of 0, no resampling, is no count)."""
    lines = [
        f"{p.relative_to(PACKAGE)}:{i}"
        for p in modules()
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "reference_map" in line
    ]
    assert len(lines) <= 4, lines
    assigned = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DEFAULT_RESAMPLES" for t in node.targets):
                assigned.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
            if isinstance(node, ast.arg | ast.AnnAssign | ast.keyword):
                name = node.arg if isinstance(node, ast.arg | ast.keyword) else getattr(node.target, "id", None)
                if name == "resamples" and isinstance(getattr(node, "value", None), ast.Constant) and node.value.value:  # type: ignore[union-attr]
                    assigned.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: resamples = {node.value.value}")  # type: ignore[union-attr]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.args[len(node.args.args) - len(node.args.defaults) :] + node.args.kwonlyargs]
                defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults)]
                for name, default in zip(names[-len(defaults) :] if defaults else [], defaults):
                    if name == "resamples" and isinstance(default, ast.Constant) and default.value:
                        assigned.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: def {node.name}(resamples={default.value})")
    assert len(assigned) == 1 and assigned[0].startswith("evaluate/choices.py"), assigned


def test_no_path_of_one_machine_in_the_tests_or_the_benchmarks():
    """A folder of this machine (its workspace, a user's home spelled out) is no default: a test or a
    benchmark reads such a place from an environment variable and skips, saying which, when unset."""
    root = PACKAGE.parent
    found = []
    for path in [*sorted((root / "tests").glob("*.py")), *sorted((root / "benchmarks").glob("*.py"))]:
        if path.name == "test_layers.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            # /home/you is the docs' placeholder home (tests/doc_runner.py prints paths under it), no machine's
            if re.search(r"""["'](/work/|/home/(?!you["'/])|/root/|/Users/)""", line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


NETWORK = ("socket", "urllib.request", "http.client", "httpx", "requests", "ssl")
POOLS = ("concurrent.futures", "multiprocessing", "threading")


def test_io_keeps_its_networking_and_its_worker_pools_in_rooms_of_their_own():
    """In io/, only io/net opens connections and only io/workers starts threads or processes: a reader
    of files imports neither."""
    problems = []
    for path in sorted((PACKAGE / "io").rglob("*.py")):
        room = path.relative_to(PACKAGE / "io").parts[0]
        for line, module in imported_modules(path):
            if module.startswith(NETWORK) and room != "net":
                problems.append(f"io/{path.relative_to(PACKAGE / 'io')}:{line}: networking ({module}) outside io/net")
            if module.startswith(POOLS) and room != "workers":
                problems.append(f"io/{path.relative_to(PACKAGE / 'io')}:{line}: a worker pool ({module}) outside io/workers")
    assert not problems, "\n".join(problems)


def test_one_html_table_writer():
    """Every table of the HTML pages is written by `qrelkit.report.page.table_html` (which escapes
    every value): no other code of the package spells a `<table`."""
    spelled = [
        f"{path.relative_to(PACKAGE)}:{i}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "<table" in line
    ]
    assert len(spelled) == 1 and spelled[0].startswith("report/page.py"), spelled


def test_one_way_out():
    """Every command prints through one `show` (of a document), and how it prints is declared once:
    one `--format`, one `--json` for the whole command line (issue 42)."""
    cli = [path.read_text(encoding="utf-8") for path in sorted((PACKAGE / "cli").glob("*.py"))]
    assert sum(len(re.findall(r"^def show", text, re.M)) for text in cli) == 1
    everything = [path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))]
    assert sum(text.count('"--format"') for text in everything) == 1
    assert sum(text.count('"--json"') for text in everything) == 1


def test_report_knows_no_results_type():
    """report/ renders documents: no alias standing for a result type read by field (`X = Any`), no
    import of a use case's or a job's result."""
    found = []
    for path in sorted((PACKAGE / "report").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == "Any":
                found.append(f"report/{path.relative_to(PACKAGE / 'report')}:{node.lineno}: an alias of Any")
        for module in _imported(tree):
            if module.startswith(("qrelkit.commands", "qrelkit.jobs", "qrelkit.evaluate.audit", "qrelkit.evaluate.compare")):
                found.append(f"report/{path.relative_to(PACKAGE / 'report')}: imports {module}")
    assert not found, "\n".join(found)


def _imported(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names
