"""The GPU image path (torchvision's JPEG decoder on a batch of byte tensors, then resize, crop and
normalise as tensors) against the CPU path (PIL, open_clip's own transform). torchvision decodes
on the CPU too (libjpeg-turbo, PIL's pixels exactly), so everything but nvJPEG itself is tested
here with ``device="cpu"``; the tests at the end need a CUDA GPU and say so when skipped."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
torchvision = pytest.importorskip("torchvision", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
open_clip = pytest.importorskip("open_clip", reason="the clip extra is not installed (pip install 'qrelkit[clip]')")
from conftest import tiny_open_clip  # noqa: E402
from image_files import encoded, photo, photo_jpegs, with_orientation  # noqa: E402
from PIL import Image  # noqa: E402

import qrelkit.embed.device_images as device_images  # noqa: E402
import qrelkit.io.images as image_io  # noqa: E402
from qrelkit.embed.device_images import decode_on_device  # noqa: E402
from qrelkit.embed.image_batches import choose_path  # noqa: E402
from qrelkit.embed.transform import ImageTransform  # noqa: E402
from qrelkit.errors import QrelkitError  # noqa: E402
from qrelkit.io import Document, Topic  # noqa: E402
from qrelkit.io.images import ImageError, ImageFile, decode_image, read_image_file  # noqa: E402
from qrelkit.judges import Pair, create_judge  # noqa: E402

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run on the GPU machine); the CPU tests cover the rest")
# open_clip's eval transforms: ViT-B-32 and ViT-L-14 (224, shortest side and centre crop), ViT-L-14-336,
# a tiny model's (32 px, what the judge tests use), and the `squash` resize mode (no crop)
TRANSFORMS = {
    "224": open_clip.image_transform(224, is_train=False),
    "336": open_clip.image_transform(336, is_train=False),
    "32": open_clip.image_transform(32, is_train=False),
    "squash-224": open_clip.image_transform(224, is_train=False, resize_mode="squash"),
}
TOPICS = [Topic("t1", "a goldfish in a pond"), Topic("t2", "the eiffel tower at night"), Topic("t3", "a red bridge in fog")]


def image_file(name: str, data: bytes) -> ImageFile:
    return ImageFile(name, data, hashlib.sha256(data).hexdigest())


@pytest.fixture(scope="module")
def jpegs(tmp_path_factory):
    """Photographs of 150-700 px, plus the edge cases of the geometry: a short side of exactly 224
    (no resize), smaller than the output (upscaled), and very wide."""
    folder = tmp_path_factory.mktemp("jpegs")
    paths = photo_jpegs(folder, 10, low=150, high=700)
    for name, (width, height) in {"exact": (300, 224), "small": (50, 40), "wide": (700, 120)}.items():
        (folder / f"{name}.jpg").write_bytes(encoded(photo(width, height, seed=7), quality=90))
        paths.append(folder / f"{name}.jpg")
    return paths


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    folder = tmp_path_factory.mktemp("clip")
    checkpoint = tiny_open_clip(folder, "TinyClipDecode", embed_dim=32)
    return {
        "model": "TinyClipDecode",
        "checkpoint": str(checkpoint),
        "model_config_file": str(folder / "TinyClipDecode.json"),
        "device": "cpu",
    }


def steps_apart(ours: torch.Tensor, reference: torch.Tensor, transform: ImageTransform) -> torch.Tensor:
    """|difference| of two normalised images in 8-bit steps of the original pixels."""
    std = torch.tensor(transform.std).view(-1, 1, 1)
    return ((ours - reference) * std * 255).abs()


# -- the transform: the same geometry, the same values ---------------------------------------------


@pytest.mark.parametrize("name", TRANSFORMS)
def test_the_processes_pil_steps_give_open_clips_values_exactly(name, jpegs):
    """The decoding processes redo open_clip's PIL steps without torchvision: bit for bit the same."""
    preprocess = TRANSFORMS[name]
    transform = ImageTransform.from_preprocess(preprocess)
    assert transform is not None
    for path in jpegs:
        image = image_io.load_image(path)
        pixels = torch.from_numpy(transform.pil_pixels(image)).permute(2, 0, 1).unsqueeze(0)
        assert torch.equal(transform.normalise(pixels)[0], preprocess(image)), path.name


@pytest.mark.parametrize("name", TRANSFORMS)
def test_the_gpu_paths_tensor_transform_is_within_one_step_of_open_clips_pil_transform(name, jpegs):
    """Stated tolerance, in 8-bit steps of a pixel value: at most two, and fewer than one value in
    100 off at all (PIL's two resampling passes are made in PIL's order, each rounded to 8 bits;
    only PIL's fixed-point weights against float ones remain: measured one value in 6,000 when
    shrinking, up to one in 40 when enlarging). Run on CPU tensors decoded by torchvision: the
    pixels nvJPEG would hand over, but from libjpeg-turbo."""
    preprocess = TRANSFORMS[name]
    transform = ImageTransform.from_preprocess(preprocess)
    files = [read_image_file(path) for path in jpegs]
    decoded = decode_on_device(files, "cpu")
    differing, values = 0, 0
    for path, file, tensor in zip(jpegs, files, decoded):
        assert isinstance(tensor, torch.Tensor), f"{path.name} was not decoded by torchvision"
        out = torch.empty((3, *transform.output_size))
        transform.tensor_pixels(tensor, out)
        steps = steps_apart(transform.normalise(out.unsqueeze(0))[0], preprocess(decode_image(file)), transform).round()
        assert steps.max() <= 2, f"{path.name}: {steps.max():.0f} steps"
        differing += int((steps > 0).sum())
        values += steps.numel()
    assert differing / values < 1e-2


def test_transforms_of_another_shape_are_not_split():
    longest = open_clip.image_transform(224, is_train=False, resize_mode="longest")  # keeps the ratio and pads
    augmenting = torchvision.transforms.Compose([torchvision.transforms.RandomResizedCrop(224), torchvision.transforms.ToTensor()])
    assert ImageTransform.from_preprocess(longest) is None
    assert ImageTransform.from_preprocess(augmenting) is None
    with pytest.raises(QrelkitError, match="image_decode: device needs open_clip's usual eval transform"):
        choose_path("device", "cpu", None)
    assert choose_path("auto", "cpu", ImageTransform.from_preprocess(TRANSFORMS["224"])) == "cpu"  # no GPU: decode on the CPU


# -- decoding: upright, and PIL for what nvJPEG is not given or refuses ------------------------------


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_turns_the_decoded_tensor_as_pil_turns_the_image(orientation):
    file = image_file(f"o{orientation}.jpg", with_orientation(photo(60, 40, seed=orientation), orientation))
    (tensor,) = decode_on_device([file], "cpu")
    assert isinstance(tensor, torch.Tensor)
    assert torch.equal(tensor.permute(1, 2, 0), torch.from_numpy(np.array(decode_image(file))))


def test_what_the_device_decoder_is_not_given_or_refuses_is_decoded_by_pil_in_its_place(monkeypatch):
    """A PNG, a CMYK JPEG, a truncated JPEG and a JPEG the device decoder refuses (as nvJPEG
    refuses some) among JPEGs: the JPEGs go to the device decoder in one batch call, the refused
    batch is retried one image at a time, the rest is decoded by PIL; every image keeps its place."""
    picture = photo(90, 70, seed=3)
    refused = encoded(photo(80, 60, seed=4), quality=80)
    files = [
        image_file("baseline.jpg", encoded(picture, quality=90)),
        image_file("picture.png", encoded(picture, "PNG")),
        image_file("cmyk.jpg", encoded(picture.convert("CMYK"), quality=90)),
        image_file("progressive.jpg", encoded(picture, quality=90, progressive=True)),
        image_file("grey.jpg", encoded(picture.convert("L"), quality=90)),
        image_file("truncated.jpg", encoded(picture, quality=90)[:600]),
        image_file("text.jpg", b"not an image at all"),
        image_file("refused.jpg", refused),
    ]
    real = torchvision.io.decode_jpeg
    calls: list[list[int]] = []

    def refusing(data, **options):
        batch = data if isinstance(data, list) else [data]
        calls.append([len(item) for item in batch])
        if any(bytes(item.numpy()) == refused for item in batch):
            raise RuntimeError("Error while decoding JPEG images: nvjpeg status 2")
        return real(data, **options)

    monkeypatch.setattr(torchvision.io, "decode_jpeg", refusing)
    out = decode_on_device(files, "cpu")
    sizes = {file.path: len(file.data) for file in files}
    batch = [sizes[name] for name in ("baseline.jpg", "progressive.jpg", "grey.jpg", "refused.jpg")]
    assert calls == [batch] + [[size] for size in batch]  # one batch call, then one by one
    kinds = {file.path: type(result).__name__ for file, result in zip(files, out)}
    assert kinds == {
        "baseline.jpg": "Tensor",
        "picture.png": "Image",
        "cmyk.jpg": "Image",
        "progressive.jpg": "Tensor",
        "grey.jpg": "Tensor",
        "truncated.jpg": "ImageError",
        "text.jpg": "ImageError",
        "refused.jpg": "Image",
    }
    assert "truncated.jpg is corrupt or truncated" in str(out[5]) and "text.jpg is not a readable image" in str(out[6])
    for file, result in zip(files, out):  # the same pixels as PIL's, wherever decoded
        if isinstance(result, torch.Tensor):
            assert torch.equal(result.permute(1, 2, 0), torch.from_numpy(np.array(decode_image(file)))), file.path
        elif isinstance(result, Image.Image):
            assert result.mode == "RGB" and np.array_equal(np.array(result), np.array(decode_image(file))), file.path


def test_a_pixel_bomb_is_refused_from_its_header_before_any_decoder_runs(monkeypatch):
    from PIL import ImageFile as PILImageFile

    bomb = image_file("bomb.jpg", encoded(photo(48, 40), quality=90))  # 1,920 pixels
    monkeypatch.setattr(image_io, "MAX_IMAGE_PIXELS", 1600)
    decoded: list[str] = []
    real_load = PILImageFile.ImageFile.load
    monkeypatch.setattr(torchvision.io, "decode_jpeg", lambda *a, **k: decoded.append("device"))
    monkeypatch.setattr(PILImageFile.ImageFile, "load", lambda self: decoded.append("pil") or real_load(self))
    (result,) = decode_on_device([bomb], "cpu")
    assert isinstance(result, ImageError) and "48x40 pixels, over the limit of 1,600" in str(result)
    assert decoded == []


def test_a_jpeg_is_given_to_the_device_only_when_complete_in_rgb_or_grey():
    header = image_io.image_header(image_file("a.jpg", encoded(photo(30, 20), quality=90)))
    assert (header.format, header.mode, header.width, header.height, header.orientation) == ("JPEG", "RGB", 30, 20, 1)
    data = encoded(photo(30, 20), quality=90)
    assert device_images.device_decodable(header, data)
    assert not device_images.device_decodable(header, data + b"\x00trailing")  # PIL decides what that is
    assert not device_images.device_decodable(dataclasses.replace(header, mode="CMYK"), data)
    assert not device_images.device_decodable(dataclasses.replace(header, orientation=None), data)  # EXIF unreadable
    assert not device_images.device_decodable(dataclasses.replace(header, format="PNG"), data)


# -- the CLIPScore judge on both paths -------------------------------------------------------------------


def judged(tiny_clip, folder, names, **options):
    judge = create_judge("clipscore", {**tiny_clip, "batch_size": 4, **options}, None)
    pairs = [Pair(topic, Document(name, image=name, image_root=str(folder))) for name in names for topic in TOPICS]
    try:
        return judge.judge(pairs)
    finally:
        judge.close()


def cosine(judgment) -> float:
    return float(judgment.raw_output.removeprefix("cos="))


def test_the_device_path_scores_like_the_cpu_path_png_and_bad_files_in_their_place(tiny_clip, jpegs, tmp_path):
    """The whole judge, image_decode device (here on CPU tensors) against cpu (PIL), with batches of
    four crossing the PNG, the failures and three images of one size: the same input errors, the PNG's cosine identical (PIL
    decodes it on both paths), the JPEGs' within 2e-4 (on the CPU both decoders give the same
    pixels: only the resampling's rounding differs; measured 3e-5)."""
    folder = jpegs[0].parent
    (folder / "picture.png").write_bytes(encoded(photo(200, 150, seed=9), "PNG"))
    (folder / "broken.jpg").write_bytes(jpegs[1].read_bytes()[:300])
    for seed in range(3):  # one size: resized together on the device path
        (folder / f"same{seed}.jpg").write_bytes(encoded(photo(260, 190, seed=20 + seed), quality=90))
    names = [jpegs[0].name, "picture.png", jpegs[2].name, "broken.jpg", "missing.jpg", *[p.name for p in jpegs[3:]]]
    names[6:6] = ["same0.jpg", "same1.jpg", "same2.jpg"]
    device = judged(tiny_clip, folder, names, image_decode="device")
    cpu = judged(tiny_clip, folder, names, image_decode="cpu")
    for fast, exact in zip(device, cpu):
        assert (fast.docid, fast.qid, fast.status) == (exact.docid, exact.qid, exact.status)
        if exact.status != "ok":
            assert fast.error == exact.error
        elif fast.docid == "picture.png":
            assert cosine(fast) == pytest.approx(cosine(exact), abs=1e-6)
        else:
            assert fast.score == pytest.approx(exact.score, abs=2e-4)
            assert 2.5 * cosine(fast) == pytest.approx(2.5 * cosine(exact), abs=2e-4)
    assert {j.docid for j in cpu if j.status != "ok"} == {"broken.jpg", "missing.jpg"}


# -- on a CUDA GPU: nvJPEG itself ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def photographs(tmp_path_factory):
    """JPEGs as a camera makes them (4:2:0 chroma) of photograph-like content: texture in the
    brightness, smooth colour. nvJPEG, as torchvision builds it, upsamples chroma by repetition
    where libjpeg-turbo interpolates; on noisy colour that alone moves a CLIPScore by up to 1e-3."""
    folder = tmp_path_factory.mktemp("photographs")
    rng = np.random.default_rng(5)
    files = {}
    for i in range(24):
        width, height = (int(x) for x in rng.integers(375, 801, size=2))
        files[f"{i:02d}.jpg"] = encoded(photo(width, height, seed=100 + i, grey_noise=True), quality=90)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder, sorted(files)


@CUDA
def test_nvjpeg_decodes_the_test_images_in_one_batch_close_to_libjpeg(photographs):
    folder, names = photographs
    files = [read_image_file(folder / name) for name in names]
    on_gpu = decode_on_device(files, "cuda")
    for file, tensor in zip(files, on_gpu):
        assert isinstance(tensor, torch.Tensor) and tensor.device.type == "cuda", f"{file.path} was not decoded by nvJPEG"
        reference = torch.from_numpy(np.array(decode_image(file))).permute(2, 0, 1)
        assert tensor.shape == reference.shape and tensor.dtype == torch.uint8
        assert (tensor.cpu().float() - reference.float()).abs().mean() < 2  # torchvision's own bound for nvJPEG


@CUDA
def test_clip_scores_of_the_gpu_path_are_within_1e_3_of_the_cpu_path(tiny_clip, photographs):
    """The same weights on the same GPU in float32: only the image path differs (nvJPEG and tensor
    transforms against PIL in processes)."""
    folder, names = photographs
    gpu = judged({**tiny_clip, "device": "cuda"}, folder, names, image_decode="device")
    cpu = judged({**tiny_clip, "device": "cuda"}, folder, names, image_decode="cpu")
    worst = max(abs(cosine(a) - cosine(b)) for a, b in zip(gpu, cpu))
    for a, b in zip(gpu, cpu):
        assert a.status == b.status == "ok"
        assert a.score == pytest.approx(b.score, abs=1e-3) and 2.5 * cosine(a) == pytest.approx(2.5 * cosine(b), abs=1e-3), worst


@CUDA
def test_a_png_among_jpegs_on_the_gpu_is_decoded_by_pil_in_its_place(tiny_clip, photographs, tmp_path):
    folder, names = photographs
    (folder / "between.png").write_bytes(encoded(photo(400, 300, seed=8), "PNG"))
    files = [read_image_file(folder / name) for name in (names[0], "between.png", names[1])]
    kinds = [type(x).__name__ for x in decode_on_device(files, "cuda")]
    assert kinds == ["Tensor", "Image", "Tensor"]
    selection = [names[0], "between.png", names[1]]
    gpu = judged({**tiny_clip, "device": "cuda"}, folder, selection, image_decode="device")
    cpu = judged({**tiny_clip, "device": "cuda"}, folder, selection, image_decode="cpu")
    for a, b in zip(gpu, cpu):
        assert a.status == b.status == "ok" and a.docid == b.docid
        tolerance = 1e-5 if a.docid == "between.png" else 1e-3  # the PNG's pixels are PIL's on both paths
        assert cosine(a) == pytest.approx(cosine(b), abs=tolerance)
