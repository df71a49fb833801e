"""``ArrayOps`` for the two kinds of task arrays: numpy on the CPU, torch tensors on CUDA (lazy import).

Poison is a NaN with a distinctive payload, written through an integer view so its bits are exact; a
kernel's own NaN (e.g. 0x7FC00000) never looks like poison and poison never looks like a value. Guard
regions of 4 KiB before and after each output hold a second pattern and are checked bit for bit. The
output view starts 4 KiB into its buffer, so its alignment is that of the allocation (>= 256 B on CUDA).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from quaere.evaluate.correctness import ErrorStats
from quaere.task.contract import OutputSpec

GUARD_BYTES = 4096
WORKSPACE_FILL = 0xA5
HOST_HASH_MAX_BYTES = 1 << 22  # hash bytes on the host below this; exact device sums above
DEVICE_SUM_CHUNK = 1 << 24
FINGERPRINT_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class BitPattern:
    """Poison and guard bit patterns of one float type, and the signed integer type to view it as."""

    itemsize: int
    poison: int
    guard: int


PATTERNS: dict[str, BitPattern] = {
    "float32": BitPattern(4, 0x7FA5A5A5, 0x7F9E3779),
    "float16": BitPattern(2, 0x7DA5, 0x7D9E),
    "bfloat16": BitPattern(2, 0x7FA5, 0x7F9E),
    "float64": BitPattern(8, 0x7FF4A5A5A5A5A5A5, 0x7FF49E3779B97F4A),
}


def pattern_for(dtype: str) -> BitPattern:
    try:
        return PATTERNS[dtype]
    except KeyError:
        raise TypeError(f"output dtype '{dtype}' is not supported; expected one of {sorted(PATTERNS)}") from None


def guard_elems(spec: OutputSpec) -> int:
    return GUARD_BYTES // pattern_for(spec.dtype).itemsize


def _numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


class NumpyOps:
    """ArrayOps over numpy arrays (CPU tasks). Float types: float32, float16, float64."""

    def __init__(self) -> None:
        import numpy

        self.np = numpy

    def _ints(self, array: Any) -> Any:
        return array.reshape(-1).view(f"<i{array.dtype.itemsize}")

    def _pattern(self, array: Any) -> BitPattern:
        return pattern_for(str(array.dtype))

    def alloc_guarded(self, spec: OutputSpec, guard_elems: int) -> tuple[Any, Any]:
        pattern_for(spec.dtype)
        numel = _numel(spec.shape)
        whole = self.np.empty(numel + 2 * guard_elems, dtype=spec.dtype)
        ints = self._ints(whole)
        ints[:guard_elems] = PATTERNS[spec.dtype].guard
        ints[guard_elems + numel :] = PATTERNS[spec.dtype].guard
        return whole[guard_elems : guard_elems + numel].reshape(spec.shape), whole

    def guards_intact(self, whole: Any, guard_elems: int) -> bool:
        ints = self._ints(whole)
        guard = self._pattern(whole).guard
        return bool((ints[:guard_elems] == guard).all() and (ints[len(ints) - guard_elems :] == guard).all())

    def poison(self, buffer: Any) -> None:
        self._ints(buffer)[:] = self._pattern(buffer).poison

    def count_poison(self, array: Any) -> int:
        return int((self._ints(array) == self._pattern(array).poison).sum())

    def checksum(self, array: Any) -> str:
        return hashlib.sha256(self.np.ascontiguousarray(array).tobytes()).hexdigest()

    def synchronize(self) -> None:
        """Nothing is asynchronous on the CPU."""

    def int_view(self, array: Any) -> Any:
        return self._ints(array)

    def fingerprint(self, array: Any) -> str:
        """sha256 of a strided sample (<= ~64 Ki elements, both ends included): cheap, and equal for two
        arrays only when they agree there (used to recognise a repeated output)."""
        flat = self.np.ascontiguousarray(array).reshape(-1)
        stride = max(1, flat.size // FINGERPRINT_ELEMENTS)
        parts = (flat[:1024], flat[::stride], flat[-1024:])
        return hashlib.sha256(b"".join(self.np.ascontiguousarray(p).tobytes() for p in parts)).hexdigest()

    def fill_ints(self, ints: Any, value: int) -> None:
        ints[:] = value

    def nbytes(self, array: Any) -> int:
        return int(array.nbytes)

    def dtype_name(self, array: Any) -> str:
        return str(array.dtype)

    def assign(self, view: Any, array: Any) -> None:
        self.np.copyto(view, array)

    def fill_bytes(self, view: Any, value: int) -> None:
        view.fill(value)

    def workspace(self, nbytes: int) -> Any:
        return self.np.full(nbytes, WORKSPACE_FILL, dtype=self.np.uint8) if nbytes > 0 else None

    def refill_workspace(self, workspace: Any) -> None:
        if workspace is not None:
            workspace.fill(WORKSPACE_FILL)

    def copy(self, array: Any) -> Any:
        return array.copy()

    def compare(self, array: Any, reference: Any) -> ErrorStats:
        np = self.np
        a = np.asarray(array, dtype=np.float64)
        r = np.asarray(reference, dtype=np.float64)
        if a.shape != r.shape:
            raise ValueError(f"reference shape {r.shape} differs from output shape {a.shape}")
        r_finite, a_finite = np.isfinite(r), np.isfinite(a)
        with np.errstate(invalid="ignore"):
            mismatch = int(((~r_finite) & (a != r)).sum() + (r_finite & ~a_finite).sum())
            both = r_finite & a_finite
            err = float(np.abs(a[both] - r[both]).max()) if both.any() else 0.0
        return ErrorStats(max_abs_err=err, nonfinite_mismatch=mismatch, nan_count=int(np.isnan(a).sum()))

    def null_candidates(self, spec: OutputSpec, inputs: dict[str, Any]) -> dict[str, Any]:
        """All zeros, and the first floating input's values truncated or tiled to the output's size."""
        np = self.np
        numel = _numel(spec.shape)
        nulls = {"zeros": np.zeros(spec.shape, dtype=spec.dtype)}
        source = next((a for a in inputs.values() if np.issubdtype(a.dtype, np.floating) and a.size), None)
        if source is not None:
            flat = source.reshape(-1).astype(spec.dtype)
            nulls["input copy"] = np.resize(flat, numel).reshape(spec.shape)
        return nulls


class TorchCudaOps:
    """ArrayOps over torch tensors on the current CUDA device. Float types: float32, bfloat16, float16.

    ``device="cpu"`` runs the same code on CPU tensors, so its logic is tested where no GPU is.
    """

    def __init__(self, device: str = "cuda") -> None:
        import torch

        self.torch = torch
        self.device = torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device(device)

    def _dtype(self, name: str) -> Any:
        pattern_for(name)
        return getattr(self.torch, name)

    def _ints(self, tensor: Any) -> Any:
        ints = {1: self.torch.int8, 2: self.torch.int16, 4: self.torch.int32, 8: self.torch.int64}
        return tensor.reshape(-1).view(ints[tensor.element_size()])

    def _pattern(self, tensor: Any) -> BitPattern:
        return pattern_for(str(tensor.dtype).removeprefix("torch."))

    def alloc_guarded(self, spec: OutputSpec, guard_elems: int) -> tuple[Any, Any]:
        numel = _numel(spec.shape)
        whole = self.torch.empty(numel + 2 * guard_elems, dtype=self._dtype(spec.dtype), device=self.device)
        ints = self._ints(whole)
        ints[:guard_elems].fill_(PATTERNS[spec.dtype].guard)
        ints[guard_elems + numel :].fill_(PATTERNS[spec.dtype].guard)
        return whole[guard_elems : guard_elems + numel].view(spec.shape), whole

    def guards_intact(self, whole: Any, guard_elems: int) -> bool:
        ints = self._ints(whole)
        guard = self._pattern(whole).guard
        edges = self.torch.cat((ints[:guard_elems], ints[ints.numel() - guard_elems :]))
        return bool((edges == guard).all().item())

    def poison(self, buffer: Any) -> None:
        self._ints(buffer).fill_(self._pattern(buffer).poison)

    def count_poison(self, array: Any) -> int:
        return int((self._ints(array) == self._pattern(array).poison).sum().item())

    def checksum(self, array: Any) -> str:
        """sha256 of the bytes for small tensors; above, exact int64 sums of the words and of index * word.

        Both sums change whenever a single word changes (its difference is nonzero and below 2**33), and the
        weighted sum also catches two words swapped.
        """
        torch = self.torch
        flat = array.detach().contiguous().reshape(-1)
        raw = flat.view(torch.uint8)
        if raw.numel() <= HOST_HASH_MAX_BYTES:
            return hashlib.sha256(raw.cpu().numpy().tobytes()).hexdigest()
        words = (raw.view(torch.int32) if raw.numel() % 4 == 0
                 else raw.view(torch.int16) if raw.numel() % 2 == 0 else raw)
        total = torch.zeros((), dtype=torch.int64, device=self.device)
        weighted = torch.zeros((), dtype=torch.int64, device=self.device)
        for start in range(0, words.numel(), DEVICE_SUM_CHUNK):
            chunk = words[start : start + DEVICE_SUM_CHUNK].to(torch.int64)
            index = torch.arange(start + 1, start + 1 + chunk.numel(), dtype=torch.int64, device=self.device)
            total += chunk.sum()
            weighted += (chunk * index).sum()
        return f"device-sums:{words.numel()}:{int(total.item())}:{int(weighted.item())}"

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def int_view(self, array: Any) -> Any:
        return self._ints(array)

    def fingerprint(self, array: Any) -> str:
        """As :meth:`NumpyOps.fingerprint`, read back from the device in one copy."""
        torch = self.torch
        flat = array.detach().reshape(-1)
        stride = max(1, flat.numel() // FINGERPRINT_ELEMENTS)
        raw = torch.cat((flat[:1024], flat[::stride], flat[-1024:])).contiguous().view(torch.uint8)
        return hashlib.sha256(raw.cpu().numpy().tobytes()).hexdigest()

    def fill_ints(self, ints: Any, value: int) -> None:
        ints.fill_(value)

    def nbytes(self, array: Any) -> int:
        return int(array.numel() * array.element_size())

    def dtype_name(self, array: Any) -> str:
        return str(array.dtype).removeprefix("torch.")

    def assign(self, view: Any, array: Any) -> None:
        view.copy_(array)

    def fill_bytes(self, view: Any, value: int) -> None:
        view.fill_(value)

    def workspace(self, nbytes: int) -> Any:
        if nbytes <= 0:
            return None
        return self.torch.full((nbytes,), WORKSPACE_FILL, dtype=self.torch.uint8, device=self.device)

    def refill_workspace(self, workspace: Any) -> None:
        if workspace is not None:
            workspace.fill_(WORKSPACE_FILL)

    def copy(self, array: Any) -> Any:
        return array.clone()

    def compare(self, array: Any, reference: Any) -> ErrorStats:
        torch = self.torch
        a = array.to(torch.float32)
        r = torch.as_tensor(reference).to(device=a.device, dtype=torch.float32)
        if tuple(a.shape) != tuple(r.shape):
            raise ValueError(f"reference shape {tuple(r.shape)} differs from output shape {tuple(a.shape)}")
        r_finite, a_finite = torch.isfinite(r), torch.isfinite(a)
        mismatch = ((~r_finite) & (a != r)).sum() + (r_finite & ~a_finite).sum()
        both = r_finite & a_finite
        diff = torch.where(both, (a - r).abs(), torch.zeros((), dtype=torch.float32, device=a.device))
        err = diff.max() if diff.numel() else torch.zeros((), device=a.device)
        values = torch.stack((err.double(), mismatch.double(), torch.isnan(a).sum().double())).tolist()
        return ErrorStats(max_abs_err=values[0], nonfinite_mismatch=int(values[1]), nan_count=int(values[2]))

    def null_candidates(self, spec: OutputSpec, inputs: dict[str, Any]) -> dict[str, Any]:
        torch = self.torch
        dtype = self._dtype(spec.dtype)
        numel = _numel(spec.shape)
        nulls = {"zeros": torch.zeros(spec.shape, dtype=dtype, device=self.device)}
        source = next((t for t in inputs.values() if torch.is_tensor(t) and t.is_floating_point() and t.numel()), None)
        if source is not None:
            flat = source.reshape(-1).to(device=self.device, dtype=dtype)
            tiled = flat.repeat(-(-numel // flat.numel()))[:numel]
            nulls["input copy"] = tiled.view(spec.shape)
        return nulls


def ops_for(device: str) -> NumpyOps | TorchCudaOps:
    """The ArrayOps of a task's device kind ('cpu' or 'cuda')."""
    return NumpyOps() if device == "cpu" else TorchCudaOps()
