"""The one image reader (qrelkit.io.images) and the ordered thread pool (qrelkit.io.workers.parallel)."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import numpy as np
import pytest
from PIL import Image

import qrelkit.io.images as image_io
from qrelkit.errors import QrelkitError
from qrelkit.io.images import ImageError, decode_image, read_image_file
from qrelkit.io.workers.parallel import ordered_map
from qrelkit.judges.chat import image_data_url


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (30, 40, 3), dtype=np.uint8)).save(folder / "a.png")
    (tmp_path / "outside.png").write_bytes((folder / "a.png").read_bytes())
    return folder


def test_the_hash_is_of_the_bytes_that_are_decoded(root):
    image = read_image_file(root / "a.png", root)
    assert image.sha256 == hashlib.sha256((root / "a.png").read_bytes()).hexdigest()
    assert decode_image(image).size == (40, 30)
    assert isinstance(ImageError("x"), QrelkitError)


def test_a_link_out_of_the_root_is_refused_when_read(root):
    (root / "link.png").symlink_to(root.parent / "outside.png")
    with pytest.raises(ImageError, match="outside the image root"):
        read_image_file(root / "link.png", root)
    with pytest.raises(ImageError, match="outside the image root"):
        read_image_file(root / ".." / "outside.png", root)
    assert read_image_file(root / "link.png").sha256  # without a root, a link is followed


def test_only_regular_files_are_read(root):
    os.mkfifo(root / "pipe.png")  # opening a FIFO for reading would block without O_NONBLOCK
    with pytest.raises(ImageError, match="not a regular file"):
        read_image_file(root / "pipe.png", root)
    (root / "folder.png").mkdir()
    with pytest.raises(ImageError, match="not a regular file|is a directory|cannot be read"):
        read_image_file(root / "folder.png", root)
    with pytest.raises(ImageError, match="not found"):
        read_image_file(root / "missing.png", root)


def test_oversized_files_and_pixel_bombs_are_refused(root, monkeypatch):
    monkeypatch.setattr(image_io, "MAX_IMAGE_BYTES", 100)
    with pytest.raises(ImageError, match="bytes, over the limit"):
        read_image_file(root / "a.png")
    monkeypatch.undo()
    monkeypatch.setattr(image_io, "MAX_IMAGE_PIXELS", 1000)  # 40x30 = 1,200 pixels
    with pytest.raises(ImageError, match="40x30 pixels, over the limit"):
        decode_image(read_image_file(root / "a.png"))


def test_truncated_and_non_image_files_fail_at_decode(root):
    data = (root / "a.png").read_bytes()
    (root / "truncated.png").write_bytes(data[: len(data) // 2])
    (root / "text.png").write_text("not an image")
    with pytest.raises(ImageError, match="truncated.png is corrupt or truncated"):
        decode_image(read_image_file(root / "truncated.png"))
    with pytest.raises(ImageError, match="text.png is not a readable image"):
        decode_image(read_image_file(root / "text.png"))
    with pytest.raises(ImageError, match="corrupt or truncated"):
        image_data_url(root / "truncated.png", root)  # the data URL is checked by the same decode


def test_ordered_map_keeps_input_order_and_a_bounded_window():
    in_flight, most = 0, 0
    lock = threading.Lock()

    def slow_square(x):
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(0.002 * (x % 3))  # finish out of order
        with lock:
            in_flight -= 1
        return x * x

    taken = []
    for value in ordered_map(slow_square, range(40), workers=4, window=6):
        taken.append(value)
    assert taken == [x * x for x in range(40)]
    assert most <= 4
    started = []
    results = ordered_map(lambda x: started.append(x) or x, range(1000), workers=2, window=5)
    assert next(results) == 0
    time.sleep(0.05)
    assert len(started) <= 6  # the window, plus the one refilled when the first was taken
    results.close()
