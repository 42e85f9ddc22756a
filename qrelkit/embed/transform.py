"""open_clip's eval transform as plain data, done two ways with the same geometry:

* `pil_pixels`: PIL's resize and crop, exactly what open_clip's torchvision transform does to a PIL
  image (the same output sizes, the same PIL calls), without importing torch, so that worker
  processes start in a tenth of a second;
* `tensor_pixels`: the same resize (bicubic or bilinear, antialiased) and crop on a decoded image
  tensor, wherever it lives (on the GPU after nvJPEG). PyTorch's antialiased bicubic uses PIL's
  kernel (a = −0.5), and the tensor path makes PIL's two passes in PIL's order, each rounded to 8
  bits, so only PIL's fixed-point arithmetic differs: about one value in 6,000 is a step of 255
  off when shrinking, up to one in 40 when enlarging (tested against open_clip's own transform).

Both give pixels in 0..255; `normalise` is torchvision's ToTensor (÷255) and Normalize with the
model's mean and std, batched, in float32 (on 8-bit values it is the same arithmetic as open_clip's).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

INTERPOLATIONS = ("bicubic", "bilinear")


@dataclass(frozen=True)
class ImageTransform:
    """Resize (the shorter side to ``resize[0]``, or to exactly ``resize`` = (height, width)),
    optionally centre-crop to ``crop`` = (height, width), then normalise with ``mean`` and ``std``."""

    resize: tuple[int, ...]
    interpolation: str
    crop: tuple[int, int] | None
    mean: tuple[float, ...]
    std: tuple[float, ...]
    max_size: int | None = None

    @classmethod
    def from_preprocess(cls, preprocess: Any) -> ImageTransform | None:
        """open_clip's eval transform (Resize, CenterCrop, RGB conversion, ToTensor, Normalize) as
        an ImageTransform; None for any other shape (its steps then run as they are)."""
        from torchvision import transforms

        steps = list(getattr(preprocess, "transforms", []))
        if len(steps) < 3 or not isinstance(steps[0], transforms.Resize) or not isinstance(steps[-1], transforms.Normalize):
            return None
        resize, normalize = steps[0], steps[-1]
        crop: tuple[int, int] | None = None
        rest = steps[1:-1]
        if rest and isinstance(rest[0], transforms.CenterCrop):
            crop = (int(rest[0].size[0]), int(rest[0].size[-1]))
            rest = rest[1:]
        if not rest or not isinstance(rest[-1], transforms.ToTensor) or not all(_is_rgb_conversion(step) for step in rest[:-1]):
            return None
        interpolation = getattr(resize.interpolation, "value", str(resize.interpolation))
        size = (resize.size,) if isinstance(resize.size, int) else tuple(int(x) for x in resize.size)
        if interpolation not in INTERPOLATIONS or len(size) not in (1, 2):
            return None
        transform = cls(size, interpolation, crop, tuple(map(float, normalize.mean)), tuple(map(float, normalize.std)), resize.max_size)
        if crop is not None and len(size) == 1 and max(crop) > size[0]:
            return None  # a crop larger than the resized image pads: not this shape
        return transform

    # -- geometry (torchvision's rules, for PIL images and tensors alike) -----------------------------

    def resized_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) after the resize: torchvision's `_compute_resized_output_size`."""
        if len(self.resize) == 2:
            return self.resize[0], self.resize[1]
        short, long = (width, height) if width <= height else (height, width)
        new_short, new_long = self.resize[0], int(self.resize[0] * long / short)
        if self.max_size is not None and new_long > self.max_size:
            new_short, new_long = int(self.max_size * new_short / new_long), self.max_size
        return (new_long, new_short) if width <= height else (new_short, new_long)

    def crop_box(self, height: int, width: int) -> tuple[int, int, int, int]:
        """(top, left, height, width) of the centre crop of a (height, width) image."""
        if self.crop is None:
            return 0, 0, height, width
        crop_height, crop_width = self.crop
        return int(round((height - crop_height) / 2.0)), int(round((width - crop_width) / 2.0)), crop_height, crop_width

    @property
    def output_size(self) -> tuple[int, int] | None:
        """(height, width) of every output, or None when it depends on the image (no crop, one side given)."""
        if self.crop is not None:
            return self.crop
        return (self.resize[0], self.resize[1]) if len(self.resize) == 2 else None

    # -- the two implementations ------------------------------------------------------------------------

    def pil_pixels(self, image: Any) -> np.ndarray:
        """An RGB PIL image resized and cropped by PIL: uint8 (height, width, 3)."""
        from PIL import Image

        height, width = self.resized_size(image.height, image.width)
        if (height, width) != (image.height, image.width):
            method = Image.Resampling.BICUBIC if self.interpolation == "bicubic" else Image.Resampling.BILINEAR
            image = image.resize((width, height), method)
        top, left, crop_height, crop_width = self.crop_box(height, width)
        if (top, left, crop_height, crop_width) != (0, 0, height, width):
            image = image.crop((left, top, left + crop_width, top + crop_height))
        return np.array(image.convert("RGB"), dtype=np.uint8)

    def tensor_pixels(self, images: Any, out: Any) -> None:
        """Decoded image tensors, uint8 (3, height, width) or (n, 3, height, width) of one size on
        any device, resized and cropped into ``out`` (float32, (3, h, w) or (n, 3, h, w), on the
        same device) as PIL does it: two passes in PIL's order, each rounded to 8 bits (bicubic
        overshoots: clipped to 0..255)."""
        import torch

        height, width = int(images.shape[-2]), int(images.shape[-1])
        new_height, new_width = self.resized_size(height, width)
        pixels = (images if images.dim() == 4 else images.unsqueeze(0)).to(torch.float32)
        passes = [(height, new_width), (new_height, new_width)]  # the width first, then the height
        if vertical_pass_first(height, width, new_height, new_width):
            passes = [(new_height, width), (new_height, new_width)]
        for size in passes:
            if size != tuple(pixels.shape[-2:]):
                pixels = torch.nn.functional.interpolate(pixels, size=size, mode=self.interpolation, antialias=True, align_corners=False)
                pixels = pixels.clamp_(0, 255).round_()
        top, left, crop_height, crop_width = self.crop_box(new_height, new_width)
        cropped = pixels[:, :, top : top + crop_height, left : left + crop_width]
        out.copy_(cropped if images.dim() == 4 else cropped[0])

    def constants(self, device: Any) -> tuple[Any, Any]:
        """(mean, std) as float32 (1, 3, 1, 1) tensors on ``device``: made once, not per batch (a
        copy from host memory would wait for the device)."""
        import torch

        return tuple(torch.tensor(v, dtype=torch.float32, device=device).view(1, -1, 1, 1) for v in (self.mean, self.std))  # type: ignore[return-value]

    def normalise(self, batch: Any, constants: tuple[Any, Any] | None = None) -> Any:
        """(n, 3, h, w) pixels in 0..255 (uint8 or float32) -> float32, as ToTensor then Normalize
        (÷255, − mean, ÷ std: the same operations in the same order, so 8-bit inputs give the same
        values as open_clip's transform). ``constants``: `constants(device)`, made beforehand."""
        import torch

        mean, std = constants if constants is not None else self.constants(batch.device)
        return batch.to(torch.float32).div(255).sub_(mean).div_(std)


def vertical_pass_first(height: int, width: int, new_height: int, new_width: int) -> bool:
    """Whether PIL resizes the height first: recent Pillow does when the height shrinks by more than
    twice as many pixels as the width (its Resample.c); older versions always start with the width."""
    shrink = height - new_height
    return shrink > 0 and shrink > (width - new_width) * 2 and _pillow_orders_its_passes()


@functools.cache
def _pillow_orders_its_passes() -> bool:
    """Whether this Pillow picks the pass order (one small resize, compared with both orders)."""
    import torch
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (96, 48), dtype=np.uint8)  # shrunk to 40 x 44: height first, if ordered
    reference = torch.from_numpy(np.array(Image.fromarray(pixels).resize((44, 40), Image.Resampling.BICUBIC))).float()
    results = {}
    for name, sizes in {"height first": [(40, 48), (40, 44)], "width first": [(96, 44), (40, 44)]}.items():
        tensor = torch.from_numpy(pixels)[None, None].float()
        for size in sizes:
            tensor = torch.nn.functional.interpolate(tensor, size=size, mode="bicubic", antialias=True, align_corners=False)
            tensor = tensor.clamp_(0, 255).round_()
        results[name] = float((tensor[0, 0] - reference).abs().max())
    return results["height first"] < results["width first"]


def _is_rgb_conversion(step: Any) -> bool:
    """open_clip's `MaybeConvertMode("RGB")` or `_convert_to_rgb` (older versions)."""
    if type(step).__name__ == "MaybeConvertMode":
        return getattr(step, "mode", "RGB") == "RGB"
    return getattr(step, "__name__", "") == "_convert_to_rgb"
