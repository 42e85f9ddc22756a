"""Bounded memory (issue 13, class 2): input is streamed, so a file far larger than the memory a
process may use is read to the end of its caps, and ends in the cap's one-line error, not in a
MemoryError or the kernel's killer. Each case runs in a subprocess whose address space is limited
to 512 MiB with `resource.setrlimit` (the interpreter, numpy and qrelkit's imports included)."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

resource = pytest.importorskip("resource")

LIMIT = 512 << 20
INFLATED = 1 << 30  # what the bomb inflates to: twice the process's whole address space
LINE = b"x" * 1023 + b"\n"  # not a `qid<TAB>text` line: each one is a problem, of which 50 are kept

READ_UNDER_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from qrelkit.errors import InputFormatError
from qrelkit.io.collection import Document, read_topics
try:
    if sys.argv[1] == "hash":
        print(Document("d1", image=sys.argv[2], image_root=sys.argv[3]).content_hash())
    else:
        read_topics(sys.argv[2])
except InputFormatError as exc:
    print(str(exc).splitlines()[0])
    sys.exit(2)
except MemoryError:
    print("MemoryError")
    sys.exit(9)
"""


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """A gzip of about 1 MiB that inflates to 1 GiB."""
    path = tmp_path_factory.mktemp("bomb") / "topics.tsv.gz"
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    block = LINE * 1024
    with open(path, "wb") as out:
        for _ in range(INFLATED // len(block)):
            out.write(packer.compress(block))
        out.write(packer.flush())
    return path


def run_limited(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **env}
    return subprocess.run(
        [sys.executable, "-c", READ_UNDER_LIMIT.format(limit=LIMIT), *args], capture_output=True, text=True, env=environ, timeout=600
    )


def test_a_gzip_bomb_ends_at_the_ratio_cap_under_a_512_mib_address_space(bomb):
    assert bomb.stat().st_size < 4 << 20
    result = run_limited("read", str(bomb))
    assert result.returncode == 2, result.stdout + result.stderr
    message = result.stdout.strip()
    assert f"{bomb}:" in message and "inflates more than 100 times" in message and "QRELKIT_MAX_INFLATE_RATIO" in message


def test_a_gzip_inflating_to_1_gib_streams_to_the_size_cap_under_a_512_mib_address_space(bomb):
    # The ratio check off: 768 MiB, more than the process may hold, pass through before the size cap stops it.
    result = run_limited("read", str(bomb), QRELKIT_MAX_INFLATE_RATIO="1000000", QRELKIT_MAX_INPUT_BYTES=str(768 << 20))
    assert result.returncode == 2, result.stdout + result.stderr
    message = result.stdout.strip()
    where, reason = message.rsplit(": inflates", 1)
    assert reason == " to more than 768 MiB, the limit (QRELKIT_MAX_INPUT_BYTES; raise it if the file is genuine)"
    # the line being read when the cap was passed: 1 KiB lines, less the stream's 256 KiB read-ahead
    assert where.startswith(f"{bomb}:") and 768 * 1024 - 256 <= int(where.rsplit(":", 1)[1]) <= 768 * 1024 + 1


def test_a_1_gib_image_is_hashed_in_blocks_under_a_512_mib_address_space(tmp_path):
    image = tmp_path / "big.png"
    with open(image, "wb") as handle:
        handle.truncate(INFLATED)  # sparse: 1 GiB of zeros without the disk
    result = run_limited("hash", "big.png", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    import hashlib

    digest = hashlib.sha256()
    block = bytes(1 << 20)
    for _ in range(INFLATED >> 20):
        digest.update(block)
    assert result.stdout.strip() == digest.hexdigest()
