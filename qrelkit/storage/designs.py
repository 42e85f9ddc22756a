"""Designed human samples in the database: each design, its phases and every planned pair with its
inclusion probability and stratum, and the human labels loaded for it (a qrels set of origin
`assessed`, tied to the design by `designs.human_set`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from qrelkit.errors import StoreError
from qrelkit.io.columnar import Block
from qrelkit.io.trec import Qrels
from qrelkit.storage.entries import registered
from qrelkit.storage.store import Store

_DESIGN_COLUMNS = "name, kind, measure, seed, scale_low, scale_high, judge, runs, pool_pairs, pool_hash, depth, human_set"
PAIR_COLUMNS = ("phase", "qid", "docid", "stratum", "stratum_size", "inclusion")


@dataclass(frozen=True)
class StoredDesign:
    """A design as recorded: what it was planned from (``judge``: the judge labels' source; ``runs``:
    run names; the pool's size and hash), its phases (each ``{"phase", "kind", "budget", "params"}``)
    and its planned pairs (columns `PAIR_COLUMNS`)."""

    name: str
    kind: str
    measure: str
    seed: int
    scale: tuple[int, int]
    judge: dict[str, Any]
    runs: list[str]
    pool_pairs: int
    pool_hash: str
    depth: int | None
    human_set: str | None
    phases: list[dict[str, Any]] = field(default_factory=list)
    pairs: pa.Table | None = None

    @property
    def budget(self) -> int:
        return int(sum(phase["budget"] for phase in self.phases))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "design": self.kind,
            "measure": self.measure,
            "seed": self.seed,
            "scale": list(self.scale),
            "judge": self.judge,
            "runs": len(self.runs),
            "pool_pairs": self.pool_pairs,
            "depth": self.depth,
            "phases": [{k: v for k, v in phase.items() if k != "params"} for phase in self.phases],
            "planned_pairs": 0 if self.pairs is None else self.pairs.num_rows,
            "human_set": self.human_set,
        }


def design_names(store: Store) -> list[str]:
    return [row[0] for row in store.con.execute("SELECT name FROM designs ORDER BY created_at, name").fetchall()]


def find_design(store: Store, name: str) -> StoredDesign | None:
    row = store.con.execute(f"SELECT {_DESIGN_COLUMNS} FROM designs WHERE name = ?", [name]).fetchone()
    if row is None:
        return None
    phases = [
        {"phase": phase, "kind": kind, "budget": budget, "params": json.loads(params) if params else {}}
        for phase, kind, budget, params in store.con.execute(
            "SELECT phase, kind, budget, params FROM design_phases WHERE design = ? ORDER BY phase", [name]
        ).fetchall()
    ]
    pairs = store.con.sql(
        f"SELECT {', '.join(PAIR_COLUMNS)} FROM design_pairs WHERE design = ? ORDER BY phase, qid, docid", params=[name]
    ).to_arrow_table()
    return StoredDesign(
        row[0], row[1], row[2], int(row[3]), (int(row[4]), int(row[5])), json.loads(row[6]), json.loads(row[7]),
        int(row[8]), row[9], row[10], row[11], phases, pairs,
    )  # fmt: skip


def read_design(store: Store, name: str) -> StoredDesign:
    found = find_design(store, name)
    if found is None:
        known = ", ".join(design_names(store)) or "none"
        raise StoreError(f"no design named {name!r} in {store.path} (designs: {known}); plan one with qrelkit assess plan")
    return found


def _insert_pairs(con: Any, name: str, pairs: pa.Table) -> None:
    with registered(con, "planned_pairs", pairs):
        columns = ", ".join(PAIR_COLUMNS)
        con.execute(f"INSERT INTO design_pairs (design, {columns}) SELECT ?, {columns} FROM planned_pairs", [name])


def write_design(store: Store, design: StoredDesign, pairs: pa.Table) -> None:
    """Record ``design`` with its first phase (``design.phases[0]``) and its ``pairs``, replacing a
    design of that name (the caller has checked that no labels were loaded for it)."""
    with store.transaction() as con:
        for table, key in (("design_pairs", "design"), ("design_phases", "design"), ("designs", "name")):
            con.execute(f"DELETE FROM {table} WHERE {key} = ?", [design.name])
        con.execute(
            f"INSERT INTO designs ({_DESIGN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                design.name, design.kind, design.measure, design.seed, design.scale[0], design.scale[1], json.dumps(design.judge),
                json.dumps(design.runs), design.pool_pairs, design.pool_hash, design.depth, None,
            ],
        )  # fmt: skip
        _insert_phase(con, design.name, design.phases[0])
        _insert_pairs(con, design.name, pairs)


def _insert_phase(con: Any, name: str, phase: dict[str, Any]) -> None:
    con.execute(
        "INSERT INTO design_phases (design, phase, kind, budget, params) VALUES (?, ?, ?, ?, ?)",
        [name, phase["phase"], phase["kind"], phase["budget"], json.dumps(phase.get("params") or {})],
    )


def add_phase(store: Store, name: str, phase: dict[str, Any], pairs: pa.Table) -> None:
    """One more phase of design ``name`` (`--next`), with its pairs."""
    with store.transaction() as con:
        _insert_phase(con, name, phase)
        _insert_pairs(con, name, pairs)


def save_labels(store: Store, name: str, set_name: str, rows: Sequence[tuple[str, str, int]], *, path: str, file_hash: str) -> int:
    """The human labels of design ``name`` as the qrels set ``set_name`` (origin `assessed`), replacing
    the labels loaded for it before, and the design tied to it; in one transaction."""
    from qrelkit.io import arrays

    existing = store.qrels_origin(set_name)
    if existing is not None and existing[0] != "assessed":
        raise StoreError(
            f"qrels set {set_name!r} holds qrels {existing[0]} from {existing[2] or existing[1]}; the labels of design {name!r} "
            "would replace them: load them under another --name"
        )
    table = arrays.table(
        {
            "qid": arrays.strings([r[0] for r in rows]),
            "iteration": arrays.strings(["0"] * len(rows)),
            "docid": arrays.strings([r[1] for r in rows]),
            "grade": arrays.column([r[2] for r in rows], pa.int64()),
        }
    )
    with store.transaction() as con:
        written = store._replace_qrels(
            con, set_name, [Block(Qrels.from_table(set_name, table).table)], origin="assessed", path=path, file_hash=file_hash
        )
        con.execute("UPDATE designs SET human_set = ? WHERE name = ?", [set_name, name])
    return written
