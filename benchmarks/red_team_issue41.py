"""Issue 41's red team, re-run: every case the issue lists (but `P@0`, issue 45's), tried as an attacker
or a careless user would, each outcome counted as one of

* security: a device, FIFO or file outside qrelkit's folders replaced, written, deleted or read; a
  process it did not start signalled;
* data loss: an input file written over; a visible half-written file left;
* traceback: a Python traceback, or an exit other than 0, 2 and 3;
* hang: no answer within the case's time (an endless body read on, a FIFO waited on);
* wrong: none of these, but not what the issue asks (a silent skip, a raw control character, a
  message that names the wrong thing, exit 0 for a run that failed);
* ok.

Each case runs the real command line (or, for the vLLM batch folder and the HTTP clients, the real
client) in a fresh temporary folder, with private device nodes (mknod, so root only), FIFOs and planted
links. Usage: python benchmarks/red_team_issue41.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import FakeOpenAI, QuietHandler, Reply, bomb, judgment_rows, openai_job, serve, write_text_collection  # noqa: E402
from hostile import plant_batch_folder_link, qrelkit  # noqa: E402
from image_files import image_collection  # noqa: E402

KINDS = ("security", "data loss", "traceback", "hang", "wrong", "ok")
QRELS = "".join(f"q{q} 0 d{d} {(q + d) % 3}\n" for q in range(1, 6) for d in range(1, 9))
MODEL = "".join(f"q{q} 0 d{d} {(q * d) % 3}\n" for q in range(1, 6) for d in range(1, 9))


class Hang(Exception):
    pass


def run(*args: object, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    try:
        return qrelkit(*args, cwd=cwd, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Hang from None


def crashed(done: subprocess.CompletedProcess) -> bool:
    return "Traceback" in done.stderr or "Traceback" in done.stdout or done.returncode not in (0, 2, 3)


def track(folder: Path) -> Path:
    (folder / "human.qrels").write_text(QRELS)
    (folder / "model.qrels").write_text(MODEL)
    (folder / "runs").mkdir()
    for r in range(3):
        lines = [f"q{q} Q0 d{(d + r) % 8 + 1} {rank} {10 - rank}.{r} run{r}" for q in range(1, 6) for rank, d in enumerate(range(8), 1)]
        (folder / "runs" / f"run{r}.run").write_text("\n".join(lines) + "\n")
    db = folder / "b.duckdb"
    run("load", "qrels", folder / "human.qrels", "--db", db)
    run("load", "qrels", folder / "model.qrels", "--name", "model", "--db", db)
    return folder


def writer(folder: Path, command: str, out: Path) -> list[object]:
    db = folder / "b.duckdb"
    common = ["--reference-qrels", folder / "human.qrels", "--runs", folder / "runs", "--resamples", "0"]
    return {
        "compare --html": ["compare", "--judge", folder / "model.qrels", *common, "--permutations", "0", "--html", out],
        "report --out": ["report", "--model-qrels", folder / "model.qrels", *common, "--out", out],
        "nrg --plot": ["nrg", "--qrels", folder / "human.qrels", "--runs", folder / "runs", "--plot", out],
        "fd --plot": ["fd", "--qrels", folder / "human.qrels", "--runs", folder / "runs", "--plot", out, "--db", db],
        "export qrels": ["export", "qrels", out, "--name", "human", "--db", db],
        "export judgments": ["export", "judgments", out, "--db", db],
    }[command]


SUFFIX = {"compare --html": ".html", "report --out": ".html", "nrg --plot": ".png", "fd --plot": ".png", "export qrels": ".qrels"}


# -- security: devices, FIFOs, links -----------------------------------------------------------------------


def device_case(command: str, kind: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        track(folder)
        suffix = SUFFIX.get(command, ".jsonl")
        node = folder / f"node{suffix}"
        if kind == "fifo":
            os.mkfifo(node)
        else:
            target = folder / "null" if kind == "link" else node
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            if kind == "link":
                node.symlink_to(target)
        done = run(*writer(folder, command, node), "--force", timeout=60)
        mode = os.lstat(node).st_mode
        intact = stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISLNK(mode) if kind == "link" else stat.S_ISCHR(mode)
        if not intact:
            return "security"
        return "traceback" if crashed(done) else "ok" if done.returncode == 2 else "wrong"

    return case


def batch_runner(folder: Path, pause: float = 60) -> tuple[object, object, int]:
    from test_vllm_batch_client import command, request_file

    from qrelkit.judges.vllm_batch import LocalBatchClient

    client = LocalBatchClient(folder / "other.duckdb.batches" / "vllm", command(pause=pause))
    source = request_file(folder, ["a"])
    info = client.create(client.upload(source, source.name), {})
    state = json.loads((folder / "other.duckdb.batches" / "vllm" / "batches" / f"{info.id}.json").read_text())
    return client, info, state["pid"]


def cancel_through_a_planted_link(folder: Path) -> str:
    from qrelkit.errors import QrelkitError
    from qrelkit.judges.vllm_batch import LocalBatchClient

    other, info, pid = batch_runner(folder)
    ours = folder / "j.duckdb.batches" / "vllm" / "batches"
    ours.mkdir(parents=True)
    (ours / f"{info.id}.json").symlink_to(folder / "other.duckdb.batches" / "vllm" / "batches" / f"{info.id}.json")
    try:
        LocalBatchClient(ours.parent).cancel(info.id)
    except QrelkitError:
        pass
    time.sleep(0.5)
    alive = Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    other.cancel(info.id)
    return "ok" if alive else "security"


def runner_deletes_through_a_files_link(folder: Path) -> str:
    from test_vllm_batch_client import command, request_file

    from qrelkit.errors import QrelkitError
    from qrelkit.judges.vllm_batch import LocalBatchClient

    victim = request_file(folder, ["a"])
    files = folder / "j.duckdb.batches" / "vllm" / "files"
    files.mkdir(parents=True)
    (files / "req.jsonl").symlink_to(victim)
    try:
        LocalBatchClient(files.parent, command()).create("req.jsonl", {})
    except QrelkitError:
        pass
    time.sleep(2)
    return "ok" if victim.is_file() else "security"


def folder_link(linked: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        from test_vllm_batch_client import command, request_file

        from qrelkit.errors import QrelkitError
        from qrelkit.judges.vllm_batch import LocalBatchClient

        root, outside = plant_batch_folder_link(folder, linked)
        client = LocalBatchClient(root / "vllm", command())
        source = request_file(folder, ["a"])
        try:
            client.create(client.upload(source, source.name), {})
        except QrelkitError:
            pass
        time.sleep(1)
        return "security" if list(outside.rglob("*")) else "ok"

    return case


def batch_output(planted: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        from test_vllm_batch_client import command, request_file, wait_until_terminal

        from qrelkit.errors import QrelkitError
        from qrelkit.judges.vllm_batch import LocalBatchClient

        client = LocalBatchClient(folder / "j.duckdb.batches" / "vllm", command())
        source = request_file(folder, ["a"])
        done = wait_until_terminal(client, client.create(client.upload(source, source.name), {}).id)
        output = folder / "j.duckdb.batches" / "vllm" / "out" / f"{done.id}.jsonl"
        output.unlink()
        if planted == "fifo":
            os.mkfifo(output)
        else:
            secret = folder / "secret.jsonl"
            secret.write_text('{"custom_id": "a", "response": {"status_code": 200, "body": {}}}\n')
            output.symlink_to("/dev/zero" if planted == "dev-zero" else secret)
        outcome: list[object] = []

        def read() -> None:
            size = 0
            try:
                for chunk in client.download(done.output_file_id):
                    size += len(chunk)
                    if size > 64 << 20:
                        outcome.append("endless")
                        return
                outcome.append("read")
            except QrelkitError:
                outcome.append("refused")

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        thread.join(10)
        if not outcome or outcome[0] == "endless":
            return "hang"
        return "security" if outcome[0] == "read" and planted == "outside" else "ok" if outcome[0] == "refused" else "wrong"

    return case


def probes_folder_link(folder: Path) -> str:
    job = image_job(folder)
    outside = folder / "outside"
    outside.mkdir()
    run("probe", job, "--probe", "blank-image", "--allow-import", "--quiet")
    probes = folder / "images.duckdb.probes"
    shutil.rmtree(probes)
    probes.symlink_to(outside, target_is_directory=True)
    done = run("probe", job, "--probe", "blank-image", "--allow-import", "--quiet", "--retry-failed")
    if list(outside.rglob("*")):
        return "security"
    return "traceback" if crashed(done) else "ok"


# -- data loss --------------------------------------------------------------------------------------------------


def over_an_input_folder(which: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        track(folder)
        if which == "runs":
            target = folder / "runs" / "run0.run"
            args = writer(folder, "compare --html", target)
        else:
            (folder / "jd").mkdir()
            shutil.copy(folder / "model.qrels", folder / "jd" / "j1.txt")
            target = folder / "jd" / "j1.txt"
            args = ["compare", "--judge", folder / "jd", "--reference-qrels", folder / "human.qrels", "--runs", folder / "runs"]
            args += ["--resamples", "0", "--permutations", "0", "--html", target]
        before = target.read_bytes()
        done = run(*args, "--force")
        if target.read_bytes() != before:
            return "data loss"
        return "traceback" if crashed(done) else "ok"

    return case


def killed_export(folder: Path) -> str:
    from qrelkit.judges import Judgment
    from qrelkit.storage import Store
    from qrelkit.storage.judgments import JudgeRunInfo, ensure_judge_run, write_judgments

    db = folder / "many.duckdb"
    with Store(db) as store:
        ensure_judge_run(store, JudgeRunInfo("cccc3333", "openai", {"model": "m"}, "t", "h" * 64, {"id": "t"}, "model-x"))
        for start in range(0, 60_000, 10_000):
            answer = "The passage answers it. " * 16
            write_judgments(
                store,
                "cccc3333",
                [Judgment(f"q{i % 50}", f"d{i}", "ok", score=2.0, raw_output=answer) for i in range(start, start + 10_000)],
            )
    out = folder / "out"
    out.mkdir()
    environ = {"PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", "PATH": "/usr/bin:/bin"}
    command = [
        sys.executable,
        str(ROOT / "tests" / "kill_when_written.py"),
        str(out),
        str(64 << 10),
        "export",
        "judgments",
        str(out / "j.jsonl"),
    ]
    subprocess.run([*command, "--db", str(db)], capture_output=True, env=environ, timeout=300)
    return "data loss" if [p for p in out.iterdir() if not p.name.startswith(".")] else "ok"


# -- bodies -------------------------------------------------------------------------------------------------------


def judge_bomb(encoding: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        with FakeOpenAI() as server:
            server.script("d1", Reply(body=bomb(encoding), headers={"Content-Encoding": encoding}))
            write_text_collection(folder, {"q1": "boil an egg"}, {"[d1]": "[d1] Eggs boil."}, [("q1", "[d1]")])
            options = {"model": "fake", "base_url": server.base_url, "api_key_env": "QRELKIT_FAKE_KEY", "max_tries": 1, "timeout": 20.0}
            done = run("judge", openai_job(folder, options), "--quiet", "--no-grade", env={"QRELKIT_MAX_RESPONSE_BYTES": str(1 << 20)})
        if crashed(done):
            return "traceback"
        [row] = judgment_rows(folder / "j.duckdb").values()
        return "ok" if "larger than 1,048,576 bytes" in (row["error"] or "") else "wrong"

    return case


class Endless(QuietHandler):
    protocol_version = "HTTP/1.1"
    stopping = threading.Event()

    def do_GET(self) -> None:
        self.send_endless(self.stopping, b"x", 0.005)


def endless(what: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        from qrelkit.jobs.batch_api import BatchDriver
        from qrelkit.judges.batch_api import BatchApiError, BatchClient

        Endless.stopping.clear()
        server, _ = serve(Endless)
        client = BatchClient(api_key="k", base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", timeout=5.0, max_tries=1)
        outcome: list[object] = []

        def go() -> None:
            try:
                if what == "GET /batches/ID":
                    client.retrieve("b1")
                else:  # an output file of one endless line
                    driver = object.__new__(BatchDriver)
                    driver.client = client
                    list(driver._read_lines("f1"))
                outcome.append("done")
            except BatchApiError:
                outcome.append("refused")
            except MemoryError:
                outcome.append("memory")

        thread = threading.Thread(target=go, daemon=True)
        thread.start()
        thread.join(60)
        answered = list(outcome)  # before the server stops: its end would end the read
        Endless.stopping.set()
        server.shutdown()
        if not answered:
            return "hang"
        return "ok" if answered[0] == "refused" else "traceback"

    return case


# -- one line, before the work ---------------------------------------------------------------------------------------


def one_line(args: Callable[[Path], list[object]], code: int = 2, says: str = "", timeout: float = 120) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        done = run(*args(folder), cwd=folder, timeout=timeout)
        if crashed(done):
            return "traceback"
        return "ok" if done.returncode == code and says in " ".join(done.stderr.split()) else "wrong"

    return case


def on_duplicate(command: list[str], given: str) -> Callable[[Path], str]:
    def args(folder: Path) -> list[object]:
        track(folder)
        if given == "config":
            (folder / "c.yaml").write_text("on_duplicate: newest\n")
            return [*command, "--config", "c.yaml"]
        return [*command, "--on-duplicate", "newest"]

    return one_line(args, 2, "--on-duplicate 'newest': choose error, first, last or max")


def image_job(folder: Path, sizes: dict[str, tuple[int, int]] | None = None, judge: str = "hostile_judges:ImageBytesJudge") -> Path:
    return image_collection(folder, sizes or {"a": (40, 30), "b": (48, 36), "c": (32, 32)}, judge)


def probe_file(folder: Path, perturbation: str, **parameters: object) -> Path:
    path = folder / "probe.yaml"
    path.write_text(json.dumps({"id": "p", "perturbation": perturbation, "tests": "t", "parameters": parameters}))
    return path


def text_job(folder: Path) -> Path:
    write_text_collection(folder, {"q1": "boil an egg"}, {"d1": "Eggs boil.", "d2": "Tea."}, [("q1", "d1"), ("q1", "d2")])
    (folder / "qrels.txt").write_text("q1 0 d1 0\nq1 0 d2 0\n")
    job = openai_job(folder, {"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "QRELKIT_FAKE_KEY"})
    spec = json.loads(json.dumps(__import__("yaml").safe_load(job.read_text())))
    spec["collection"]["qrels"] = {"nist": "qrels.txt"}
    job.write_text(json.dumps(spec))
    return job


def scaled_copy(folder: Path) -> str:
    job = image_job(folder, {"a": (40, 30), "big": (4000, 3000)})
    done = run("probe", job, "--probe", probe_file(folder, "scale", factor=4), "--allow-import", "--quiet", timeout=180)
    return "traceback" if crashed(done) else "ok" if done.returncode == 0 else "wrong"


def crafted_state(state: dict) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        from qrelkit.judges.vllm_batch import LocalBatchClient

        batches = folder / "j.duckdb.batches" / "vllm" / "batches"
        batches.mkdir(parents=True)
        (batches / "vllm-1.json").write_text(json.dumps(state))
        client = LocalBatchClient(batches.parent)
        try:
            client.retrieve("vllm-1")
            client.find_batches(["x"])
            client.cancel("vllm-1")
        except Exception:  # noqa: BLE001 - what the case counts
            return "traceback"
        return "ok"

    return case


def foreign(statements: list[str]) -> Callable[[Path], list[object]]:
    def args(folder: Path) -> list[object]:
        import duckdb

        with duckdb.connect(str(folder / "f.duckdb")) as con:
            for statement in statements:
                con.execute(statement)
        return ["show", "--db", folder / "f.duckdb"]

    return args


def no_template(folder: Path) -> list[object]:
    job = text_job(folder)
    spec = json.loads(job.read_text())
    spec.pop("template")
    job.write_text(json.dumps(spec))
    return ["judge", job, "--dry-run"]


def broken_judge_probe(folder: Path) -> str:
    job = image_job(folder, judge="hostile_judges:FailingJudge")
    done = run("probe", job, "--probe", "blank-image", "--allow-import", "--quiet")
    return "traceback" if crashed(done) else "ok" if done.returncode == 3 else "wrong"


# -- names and folders ------------------------------------------------------------------------------------------------


def crafted_names(output: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        import duckdb

        track(folder)
        db = folder / "b.duckdb"
        run("load", "runs", folder / "runs", "--db", db)
        with duckdb.connect(str(db)) as con:
            con.execute("UPDATE qrels_sets SET name = 'mo\u202edel' WHERE name = 'model'")
            con.execute("UPDATE runs SET name = 'run\nzero\x1b[31m' WHERE name = 'run0'")
        args = ["compare", "--judge", "mo\u202edel", "--reference-qrels", "human", "--resamples", "0", "--permutations", "0", "--db", db]
        page = folder / "p.html"
        done = run(*args, *(["--html", page] if output == "html" else ["--format", output]))
        if crashed(done):
            return "traceback"
        shown = page.read_text() if output == "html" else done.stdout
        raw = "\u202e" in shown or "\x1b" in shown or any(line.strip("│ ").startswith("zero") for line in shown.splitlines())
        return "wrong" if raw else "ok"

    return case


def odd_name(name: str) -> Callable[[Path], str]:
    def case(folder: Path) -> str:
        track(folder)
        done = run("load", "qrels", folder / "model.qrels", "--name", name, "--db", folder / "b.duckdb")
        return "traceback" if crashed(done) else "ok" if done.returncode == 2 else "wrong"

    return case


def matplotlib_warning(folder: Path) -> str:
    code = (
        "import warnings; from qrelkit.cli.base import _show_warning; warnings.showwarning = _show_warning; "
        "from matplotlib.figure import Figure; f = Figure(); f.subplots().set_title('r\\x1b]0;x\\x07'); "
        f"f.savefig({str(folder / 'x.png')!r})"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return "wrong" if "\x1b" in done.stderr or "\x07" in done.stderr else "ok"


def judge_folder_specials(folder: Path) -> str:
    track(folder)
    judges = folder / "jd"
    judges.mkdir()
    shutil.copy(folder / "model.qrels", judges / "j1.txt")
    os.mkfifo(judges / "pipe.txt")
    (judges / "zero.txt").symlink_to("/dev/zero")
    (judges / "l1.txt").symlink_to(judges / "l2.txt")
    (judges / "l2.txt").symlink_to(judges / "l1.txt")
    args = ["compare", "--judge", judges, "--reference-qrels", folder / "human.qrels", "--runs", folder / "runs", "--resamples", "0"]
    done = run(*args, "--permutations", "0", timeout=60)
    if crashed(done):
        return "traceback"
    said = " ".join(done.stderr.split())
    return "ok" if all(name in said for name in ("pipe.txt", "zero.txt", "l1.txt")) else "wrong"


def trickle_part(folder: Path) -> str:
    from bundle_mirror import serve as serve_folder
    from test_untrusted_folders import atomic_mirror

    from qrelkit.io.bundles import load_bundle
    from qrelkit.io.net import download as download_module
    from qrelkit.io.net.download import Interrupted, Mirror
    from qrelkit.io.net.fetch import State
    from qrelkit.io.net.fetch_images import fetch_images

    download_module.STALL_SECONDS, download_module.STALL_BYTES = 0.3, 1024
    mirror = atomic_mirror(folder / "mirror", [{"docid": "img1", "image": "images/img1.png"}])
    data = folder / "data" / "atomic-2023"
    data.mkdir(parents=True)
    (data / "pooled-images.txt").write_text("img1\n")
    images = load_bundle("atomic-2023").images
    with serve_folder(mirror) as (base, handler):
        handler.trickle["/atomic-2023/images/img1.png"] = (0.05, 10_000)
        try:
            fetch_images(images, data, State(data), mirror=Mirror(base), urls=None, max_images=1)
        except Interrupted:
            pass
    left = [p for p in data.rglob("*") if p.is_file() and p.name != "pooled-images.txt"]
    return "wrong" if left else "ok"


CASES: dict[str, Callable[[Path], str]] = {
    **{
        f"--force onto a {kind}: {command}": device_case(command, kind)
        for command in [*SUFFIX, "export judgments"]
        for kind in ("device", "fifo", "link")
    },
    "batches cancel through a planted state link": cancel_through_a_planted_link,
    "a link in files/ and the runner's unlink": runner_deletes_through_a_files_link,
    **{
        f"folder link beside the database: {linked}": folder_link(linked)
        for linked in ("vllm/out", "vllm/batches", "vllm/files", "vllm", ".")
    },
    "folder link: <db>.probes": probes_folder_link,
    **{f"vLLM output out/<id>.jsonl as {planted}": batch_output(planted) for planted in ("dev-zero", "fifo", "outside")},
    "compare --html over a run in --runs": over_an_input_folder("runs"),
    "compare --html over a judge file in --judge": over_an_input_folder("judges"),
    "SIGKILL while exporting judgments": killed_export,
    **{f"judge answer {encoding} bomb": judge_bomb(encoding) for encoding in ("gzip", "deflate")},
    **{f"endless body: {what}": endless(what) for what in ("GET /batches/ID", "output file line")},
    **{
        f"--on-duplicate unknown ({given}): {' '.join(command[:2])}": on_duplicate(command, given)
        for command in (
            ["evaluate", "--qrels", "human.qrels", "--runs", "runs"],
            ["agree", "--model-qrels", "model.qrels", "--reference-qrels", "human.qrels", "--runs", "runs"],
            ["compare", "--judge", "model.qrels", "--reference-qrels", "human.qrels", "--runs", "runs"],
            ["nrg", "--qrels", "human.qrels", "--runs", "runs"],
            ["correlate", "--qrels", "human.qrels", "--runs", "runs"],
            ["load", "qrels", "human.qrels", "--db", "c.duckdb"],
            ["load", "runs", "runs", "--db", "c.duckdb"],
        )
        for given in ("flag", "config")
    },
    "probe --seed -1": one_line(lambda f: ["probe", text_job(f), "--probe", "padding", "--seed", "-1"], 2, "--seed -1"),
    "probe --reference-qrels nosuch": one_line(
        lambda f: ["probe", text_job(f), "--probe", "padding", "--reference-qrels", "nosuch"], 2, "'nosuch': no such file"
    ),
    "probe colour 300": one_line(
        lambda f: ["probe", image_job(f), "--probe", probe_file(f, "blank", color=[300, 0, 0]), "--allow-import"], 2, "255"
    ),
    "probe typographic text of 1 MB": one_line(
        lambda f: ["probe", image_job(f), "--probe", probe_file(f, "typographic", text="x " * 500_000), "--allow-import"], 2, "1000", 90
    ),
    "probe scale 4 of a 12 Mpx image": scaled_copy,
    "probe with a judge that fails every pair": broken_judge_probe,
    "nrg --plot FILE.run --force": one_line(
        lambda f: ["nrg", "--qrels", track(f) / "human.qrels", "--runs", f / "runs", "--plot", "o.run", "--force"], 2, "no figure format"
    ),
    **{
        f"crafted vLLM state: {name}": crafted_state(state)
        for name, state in (
            ("pid 10^30", {"id": "vllm-1", "status": "in_progress", "pid": 10**30}),
            ("metadata a list", {"id": "vllm-1", "status": "completed", "metadata": ["a", "b"]}),
        )
    },
    "foreign DuckDB: meta key INTEGER": one_line(
        foreign(["CREATE TABLE meta (key INTEGER, value TEXT)", "INSERT INTO meta VALUES (1, 'x')"]), 2, "not a qrelkit one"
    ),
    "foreign DuckDB: NULL schema_version": one_line(
        foreign(["CREATE TABLE meta (key TEXT, value TEXT)", "INSERT INTO meta VALUES ('schema_version', NULL)"]), 2, "no schema version"
    ),
    "openai job without template: judge --dry-run": one_line(no_template, 2, "needs a prompt template"),
    **{f"stored name with U+202E, newline, ESC: {output}": crafted_names(output) for output in ("table", "markdown", "latex", "html")},
    **{f"name {name!r}": odd_name(name) for name in (" ", "", "nist\u200b", "nist ")},
    "matplotlib warning with control characters": matplotlib_warning,
    "FIFO, /dev/zero link, link loop in a judge folder": judge_folder_specials,
    "trickle stop fetching an image: .part left": trickle_part,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    counts: Counter[str] = Counter()
    for name, case in CASES.items():
        if options.only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            started = time.monotonic()
            try:
                outcome = case(Path(tmp))
            except Hang:
                outcome = "hang"
            except Exception as exc:  # noqa: BLE001 - a case that itself fails is counted, and named
                outcome = "traceback"
                print(f"  ({name}: {type(exc).__name__}: {exc})", flush=True)
        counts[outcome] += 1
        print(f"{outcome:10} {time.monotonic() - started:6.1f} s  {name}", flush=True)
    print("\n| " + " | ".join(KINDS) + " | cases |")
    print("|" + "---:|" * (len(KINDS) + 1))
    print("| " + " | ".join(str(counts[kind]) for kind in KINDS) + f" | {sum(counts.values())} |")


if __name__ == "__main__":
    main()
