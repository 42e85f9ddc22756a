"""What a page shows against what the program printed (the rules are in tests/doc_examples.py's docstring):
masking, number tokens, line-by-line matching with elisions, JSON excerpts, quoted numbers; and the
reverse, the shown text rewritten from what was printed."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

# -- masks: what differs from run to run or machine to machine, replaced by a placeholder on both sides --
MASKS = [
    ("‹path›", re.compile(r"(?<![\w./-])(?:~|\$\{?\w+\}?|\.{1,2})?/[^\s'\"`,;)\]}>…]+")),
    ("‹date›", re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b")),
    ("‹time›", re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")),
    ("‹size›", re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:bytes|B|kB|KB|MB|GB|TB|KiB|MiB|GiB)\b")),
    ("‹rate›", re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:[A-Za-z]+)?/s\b")),
    ("‹time›", re.compile(r"(?<![\w.])\d+h(?:\d+m)?(?:\d+s)?\b|(?<![\w.])\d+m\d+(?:\.\d+)?s\b")),
    ("‹time›", re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds|min|minutes|h|hours)\b")),
    ("pid ‹pid›", re.compile(r"\bpid\s*=?\s*\d+")),
]
# a table column whose values are run times: masked in every row below its header
TIMING_COLUMN = re.compile(r"^(?:time(?: s)?|elapsed(?: s)?|seconds|s|pairs/s|rate)$", re.I)
NUMBER = re.compile(r"(?<![\w.])(?<!\w[-−+])[-−+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?%?(?![A-Za-z_\d])")
WORD = re.compile(r"[^\W\d_]+")
ANNOTATION = re.compile(r"\s{2,}… .*$")  # a page's own comment at the end of a shown line
ELLIPSIS = "…"


def mask(text: str) -> str:
    for placeholder, pattern in MASKS:
        text = pattern.sub(placeholder, text)
    return text


def mask_timing_columns(lines: list[str]) -> list[str]:
    """Each table's run-time columns, by their header: plain tables (a dashed rule under the header)
    and Markdown tables."""
    out, spans, cells = list(lines), [], []
    for number, line in enumerate(lines):
        if re.fullmatch(r"\s*-[-\s]*", line) and number and "-" in line:
            header = lines[number - 1]
            spans = [m.span() for m in re.finditer(r"-+", line) if TIMING_COLUMN.match(header[m.start() : m.end()].strip())]
            cells = []
        elif re.fullmatch(r"\|(?:\s*:?-+:?\s*\|)+", line.strip()) and number:
            heads = [c.strip() for c in lines[number - 1].strip().strip("|").split("|")]
            cells = [i for i, head in enumerate(heads) if TIMING_COLUMN.match(head)]
            spans = []
        elif not line.strip():
            spans, cells = [], []
        elif spans:
            chars = list(line.ljust(max(end for _, end in spans)))
            for start, end in spans:
                chars[start:end] = "‹time›".rjust(end - start)
            out[number] = "".join(chars).rstrip()
        elif cells and line.strip().startswith("|"):
            parts = line.strip().strip("|").split("|")
            for i in cells:
                if i < len(parts):
                    parts[i] = " ‹time› "
            out[number] = "|" + "|".join(parts) + "|"
    return out


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text)


def words(text: str) -> list[str]:
    return WORD.findall(NUMBER.sub(" ", text))


def _value(token: str) -> tuple[float, int] | None:
    bare = token.replace(",", "").replace("−", "-").replace("+", "").rstrip("%")
    try:
        value = float(bare)
    except ValueError:
        return None
    return value, len(bare.partition(".")[2]) if "." in bare and "e" not in bare.lower() else 0


def same_number(shown: str, printed: str) -> bool:
    """Equal, or ``printed`` rounds to ``shown`` at the decimals ``shown`` has (a page may round)."""
    a, b = _value(shown), _value(printed)
    if a is None or b is None:
        return shown == printed
    (value, places), (full, full_places) = a, b
    if places >= full_places:
        return value == full
    return abs(round(full, places) - value) < 10 ** -(places + 3) or abs(full - value) <= 0.5 * 10**-places + 1e-12


def line_problem(shown: str, printed: str) -> str | None:
    """Why a shown line is not the printed one: its numbers (in order) or its words differ."""
    a, b = numbers(shown), numbers(printed)
    if len(a) != len(b) or not all(map(same_number, a, b)):
        return "numbers differ"
    if words(shown) != words(printed):
        return "words differ"
    return None


def is_elision(line: str) -> bool:
    return re.sub(r"^\s*(?:[-*>]\s+)?", "", line).startswith(ELLIPSIS)


def prepared(lines: list[str]) -> list[tuple[int, str]]:
    """(index, masked text) of the non-blank lines, annotations cut."""
    masked = mask_timing_columns([mask(ANNOTATION.sub("", line).rstrip()) for line in lines])
    return [(i, line) for i, line in enumerate(masked) if line.strip()]


def segments(shown: list[str]) -> tuple[list[list[tuple[int, str]]], bool, bool]:
    """The shown lines cut at elision lines; whether one opens and one closes the block."""
    parts: list[list[tuple[int, str]]] = [[]]
    for index, line in prepared(shown):
        if is_elision(line):
            parts.append([])
        else:
            parts[-1].append((index, line))
    opens = bool(prepared(shown)) and is_elision(prepared(shown)[0][1])
    closes = bool(prepared(shown)) and is_elision(prepared(shown)[-1][1])
    return [p for p in parts if p], opens, closes


def _run_length(segment: list[tuple[int, str]], printed: list[tuple[int, str]], at: int) -> int:
    """How many of the segment's lines match the printed lines from ``at`` on."""
    count = 0
    for offset, (_, line) in enumerate(segment):
        if at + offset >= len(printed) or line_problem(line, printed[at + offset][1]):
            break
        count += 1
    return count


def align(shown: list[str], printed_text: str, first: int = 0) -> tuple[list[tuple[list[tuple[int, str]], int]], list[str]]:
    """Each segment of the shown lines with the index (in the printed non-blank lines) where it
    matches, and the problems: a shown line with no printed counterpart, or printed lines the page
    does not show and does not elide."""
    printed = prepared(printed_text.splitlines())
    parts, opens, closes = segments(shown)
    if not parts and not opens and printed:
        return [], [f"the page shows nothing; the program printed\n    {printed[0][1]}"]
    placed, problems, position = [], [], 0
    for number, segment in enumerate(parts):
        starts = [position] if number == 0 and not opens else range(position, len(printed) + 1)
        best = max(starts, key=lambda at: (_run_length(segment, printed, at), -at), default=position)
        matched = _run_length(segment, printed, best)
        placed.append((segment, best))
        if matched < len(segment):
            index, line = segment[matched]
            there = printed[best + matched][1] if best + matched < len(printed) else "(nothing more)"
            where = f"line {first + index + 1} of the page" if first else f"line {index + 1} of the block"
            problems.append(f"{where}: the page shows\n    {line}\n  the program printed\n    {there}")
            return placed, problems
        position = best + matched
    if parts and not closes and position < len(printed):
        problems.append(f"the program printed more than the page shows, from\n    {printed[position][1]}")
    return placed, problems


def _alike(segment: list[tuple[int, str]], printed: list[tuple[int, str]], at: int) -> int:
    """How many of the segment's lines have the words of the printed lines from ``at`` on."""
    return sum(1 for k, (_, line) in enumerate(segment) if at + k < len(printed) and words(line) == words(printed[at + k][1]))


def _span_end(segment: list[tuple[int, str]], printed: list[tuple[int, str]], start: int) -> int:
    """Where in ``printed`` a segment placed at ``start`` ends: the line nearest its expected place
    with the words of the segment's last line (lines may have come or gone inside it)."""
    expected = start + len(segment) - 1
    near = sorted(range(max(start, expected - len(segment)), min(len(printed), expected + 20)), key=lambda i: abs(i - expected))
    same = [i for i in near if _key(printed[i][1]) == _key(segment[-1][1])]  # the same line, if it is still printed
    alike = [i for i in near if words(printed[i][1]) == words(segment[-1][1])]
    return (same or alike or [min(expected, len(printed) - 1)])[0]


def regenerate(shown: list[str], printed_text: str) -> list[str]:
    """The shown block rewritten from what was printed: the whole output when the page elides
    nothing (or a segment has no like lines), else each segment taken again from the printed lines
    it spans (from where its lines' words best match to where its last line is; from the first
    printed line when the page does not elide the start, to the last when it does not elide the
    end), elision lines kept. A line equal to the page's but for a path keeps the page's text (its
    readable path, its note)."""
    printed_lines = [line.rstrip() for line in printed_text.rstrip("\n").splitlines()]
    if not any(is_elision(line) for line in shown):
        return _keep_equal(shown, printed_lines)
    kept = prepared(printed_lines)
    parts, opens, closes = segments(shown)
    out: list[str] = []
    position, done = 0, 0  # in kept; in shown
    for number, segment in enumerate(parts):
        anchored = number == 0 and not opens
        starts = range(position, len(kept))
        best = 0 if anchored else max(starts, key=lambda at: (_alike(segment, kept, at), -at), default=position)
        if not anchored and _alike(segment, kept, best) == 0:
            return _keep_equal(shown, printed_lines)
        end = len(kept) - 1 if number == len(parts) - 1 and not closes else _span_end(segment, kept, best)
        first, last = segment[0][0], segment[-1][0]
        out += shown[done:first]  # the elision lines (and blank lines) before it
        span = printed_lines[kept[best][0] : kept[end][0] + 1] if best <= end and best < len(kept) else []
        out += _keep_equal(shown[first : last + 1], span)
        position, done = end + 1, last + 1
    return out + shown[done:]


def _keep_equal(shown: list[str], printed: list[str]) -> list[str]:
    """``printed``, where a line equal to one of ``shown`` up to the masks keeps the shown text."""
    bare = [_key(line) for line in shown]
    fresh = [_key(line) for line in printed]
    out = list(printed)
    matcher = difflib.SequenceMatcher(a=bare, b=fresh, autojunk=False)
    for tag, a0, a1, b0, _ in matcher.get_opcodes():
        if tag == "equal":
            for k in range(a1 - a0):
                out[b0 + k] = shown[a0 + k].rstrip()
    return out


def _key(line: str) -> str:
    """A line as --update compares it with the page's: its note cut, its paths masked (a time or a
    rate is taken as printed, so a block's figures agree), spaces collapsed."""
    path_mask, path = MASKS[0]
    return re.sub(r"\s+", " ", path.sub(path_mask, ANNOTATION.sub("", line))).strip()


# -- JSON --


def json_in(printed: str) -> Any:
    """The JSON document in what a command printed (stderr's lines may come before it)."""
    lines = printed.splitlines()
    for number, line in enumerate(lines):
        if line.startswith(("{", "[")):
            try:
                return json.JSONDecoder().raw_decode("\n".join(lines[number:]))[0]
            except json.JSONDecodeError:
                continue
    raise ValueError("no JSON in what the program printed")


def json_problems(shown: Any, printed: Any, where: str = "") -> list[str]:
    """Where the page's JSON excerpt differs from the printed value: "..." stands for anything (a
    value, the rest of a list, or a key with its value); a number may be rounded."""
    if shown == "...":
        return []
    if isinstance(shown, dict):
        if not isinstance(printed, dict):
            return [f"{where or 'the top'}: the page shows an object, the program printed {json.dumps(printed)[:80]}"]
        problems = []
        for key, value in shown.items():
            if key == "...":
                continue
            if key not in printed:
                problems.append(f"{where}.{key}: not in what the program printed")
            else:
                problems += json_problems(value, printed[key], f"{where}.{key}")
        return problems
    if isinstance(shown, list):
        if not isinstance(printed, list):
            return [f"{where}: the page shows a list, the program printed {json.dumps(printed)[:80]}"]
        problems = []
        for index, value in enumerate(shown):
            if value == "...":
                return problems
            if index >= len(printed):
                return problems + [f"{where}[{index}]: the program printed only {len(printed)} items"]
            problems += json_problems(value, printed[index], f"{where}[{index}]")
        if len(printed) != len(shown):
            problems.append(f"{where}: the page shows {len(shown)} items, the program printed {len(printed)}")
        return problems
    if isinstance(shown, bool) or shown is None or isinstance(printed, bool) or printed is None:
        return [] if shown == printed else [f"{where}: the page shows {json.dumps(shown)}, the program printed {json.dumps(printed)}"]
    if isinstance(shown, int | float) and isinstance(printed, int | float):
        return [] if same_number(json.dumps(shown), repr(printed)) else [f"{where}: the page shows {shown}, the program printed {printed}"]
    if isinstance(shown, str) and isinstance(printed, str) and mask(shown) == mask(printed):
        return []
    return [f"{where}: the page shows {json.dumps(shown)}, the program printed {json.dumps(printed)}"]


def nodes(value: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every object and list in a JSON value, with its path."""
    found = [(where, value)] if isinstance(value, dict | list) else []
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        found += nodes(child, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")
    return found


def matching_node(shown: Any, printed: Any) -> tuple[str, Any, list[str]]:
    """The node of ``printed`` the excerpt shows (the whole, or a part: one difference of many), and
    its problems; with none matching, the node sharing most keys."""
    candidates = nodes(printed)

    def score(item: tuple[str, Any]) -> tuple[int, int]:
        _, node = item
        problems = json_problems(shown, node)
        shared = len(set(shown) & set(node)) if isinstance(shown, dict) and isinstance(node, dict) else 0
        return (-len(problems) if shared or not isinstance(shown, dict) else -(10**6), shared)

    where, node = max(candidates, key=score)
    return where, node, json_problems(shown, node, where)


def rewritten_json(shown: Any, printed: Any) -> Any:
    """The excerpt with the printed values in place of its own (rounded as the page rounds them)."""
    if shown == "..." or printed is None:
        return shown if printed is None and shown == "..." else (printed if shown != "..." else shown)
    if isinstance(shown, dict) and isinstance(printed, dict):
        return {k: (v if k == "..." else rewritten_json(v, printed.get(k))) for k, v in shown.items()}
    if isinstance(shown, list) and isinstance(printed, list):
        out = [rewritten_json(v, printed[i]) if i < len(printed) and v != "..." else v for i, v in enumerate(shown)]
        if "..." not in shown and len(printed) > len(shown):
            out += printed[len(shown) :]
        return out[: len(printed)] if "..." not in shown else out
    if isinstance(shown, float) and isinstance(printed, int | float) and not isinstance(printed, bool):
        places = len(repr(shown).partition(".")[2])
        return round(float(printed), places) if len(repr(float(printed)).partition(".")[2]) > places else printed
    return printed


def dump_json(value: Any, indent: int = 0, width: int = 110) -> str:
    """JSON laid out as the pages do: a value on one line when it fits, else its items packed into
    lines of at most ``width`` characters, an item too long for one line laid out the same way."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + indent <= width or not isinstance(value, dict | list) or not value:
        return flat
    if isinstance(value, dict):
        keys = [json.dumps(k, ensure_ascii=False) + ": " for k in value]
        items = [key + dump_json(v, indent + 1 + len(key), width) for key, v in zip(keys, value.values())]
    else:
        items = [dump_json(v, indent + 1, width) for v in value]
    lines: list[str] = []
    for item in items:
        if lines and "\n" not in item and "\n" not in lines[-1] and indent + 1 + len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += ", " + item
        else:
            lines.append(item)
    opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return opener + (",\n" + " " * (indent + 1)).join(lines) + closer


# -- numbers quoted in prose --


def quoted_numbers(text: str) -> list[str]:
    """The numbers of a paragraph or table, leaving out code spans, link targets, and a table's
    labels (its header row and first column)."""
    if text.lstrip().startswith("|"):
        rows = [line.strip().strip("|").split("|") for line in text.splitlines()[2:]]
        text = "\n".join(" | ".join(cells[1:]) for cells in rows)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return numbers(mask(text))


def unquoted(text: str, printed: str) -> list[str]:
    """The paragraph's numbers that the program did not print (none rounds to them)."""
    pool = numbers(mask(printed))
    return [n for n in quoted_numbers(text) if not any(same_number(n, p) for p in pool)]
