"""Arrow arrays to and from numpy arrays and Python lists, without `pa.array` or `to_numpy`.

Both ask pyarrow's pandas shim about their input, and the shim imports pandas to answer when
pandas is installed: ~0.7 s of startup for a command that never uses pandas. Going through the
buffers skips the question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

_NUMPY = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d numeric numpy array as an Arrow array (no nulls; the buffer is shared when contiguous)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def strings(values: Sequence[str]) -> pa.Array:
    """Python strings as an Arrow string array."""
    encoded = [value.encode("utf-8") for value in values]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    kind = pa.string() if offsets[-1] < 2**31 else pa.large_string()
    offsets = offsets.astype(np.int32 if kind == pa.string() else np.int64)
    return pa.Array.from_buffers(kind, len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def column(values: Sequence | np.ndarray, kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of type ``kind`` (strings, or a numeric type)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return strings(list(values)).cast(kind)
    return from_numpy(np.asarray(values, dtype=_NUMPY[kind]))


def table(columns: Mapping[str, pa.Array | pa.ChunkedArray | np.ndarray]) -> pa.Table:
    """A table of named columns; numpy columns are converted by `from_numpy`."""
    arrays = [from_numpy(value) if isinstance(value, np.ndarray) else value for value in columns.values()]
    return pa.Table.from_arrays(arrays, names=list(columns))


def numbers(values: pa.Array | pa.ChunkedArray, missing: int | float | None = None) -> np.ndarray:
    """A numeric Arrow array as a numpy array (a view of its buffer when it has one chunk and no
    nulls); nulls become ``missing``, which must then be given."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    start, stop = values.offset, values.offset + len(values)
    data = np.frombuffer(values.buffers()[1], dtype=np.dtype(_NUMPY[values.type]), count=stop)[start:]
    if not values.null_count:
        return data
    if missing is None:
        raise ValueError("the array has nulls: say what they become")
    valid = np.unpackbits(np.frombuffer(values.buffers()[0], np.uint8), bitorder="little")[start:stop].astype(bool)
    return np.where(valid, data, missing)


def factorized(values: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """The distinct values (sorted) and each value's index among them (int64), found by sorting: a
    hash table of millions of distinct strings (Arrow's `dictionary_encode`, `unique`) costs several
    times the strings' own memory, a sort's indices 8 bytes a value (5,000,000 docids: 1.8 s and
    no growth, against 5.8 s and +500 MB)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if len(values) == 0:
        return values, np.zeros(0, np.int64)
    import pyarrow.compute as pc

    order = numbers(pc.sort_indices(values))  # uint64, used as they are: no copy of millions of indices
    ordered = values.take(from_numpy(order))
    starts = np.ones(len(order), bool)
    if len(order) > 1:
        starts[1:] = np.unpackbits(
            np.frombuffer(pc.not_equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)).buffers()[1], np.uint8), bitorder="little"
        )[: len(order) - 1].astype(bool)
    group = np.cumsum(starts, dtype=np.int64)
    group -= 1
    codes = np.empty(len(order), np.int64)
    codes[order] = group
    return ordered.filter(from_bools(starts)), codes


def from_bools(values: np.ndarray) -> pa.Array:
    """A numpy bool array as an Arrow boolean array (bit-packed)."""
    packed = np.packbits(np.asarray(values, bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(packed)])
