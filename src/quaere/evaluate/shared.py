"""Buffers the judge owns and lends to a runner: shared memory on the CPU, CUDA IPC on the GPU.

Each buffer is its own allocation (a ``memfd`` on the CPU, a ``cuMemAlloc`` on the GPU, never a slice of a
caching allocator's pool), so a runner that maps it reaches that buffer and nothing else of the judge's.
The judge works on the same bytes through array views of its own kind (numpy arrays, or torch tensors
built over the CUDA pointer with ``__cuda_array_interface__``), and reads every verdict from that mapping.
"""

from __future__ import annotations

import fcntl
import math
import mmap
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from quaere.evaluate.protocol import BufferSpec

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int64": 8, "uint8": 1,
               "int8": 1, "int16": 2}


class SharedBuffer(Protocol):
    """One judge-owned allocation a runner can map."""

    id: str
    nbytes: int

    def typed(self, dtype: str, shape: tuple[int, ...], offset_bytes: int = 0) -> Any:
        """An array of the judge's kind over ``shape`` elements of ``dtype`` starting at ``offset_bytes``."""
        ...

    def export(self) -> tuple[BufferSpec, int | None]:
        """The runner's description of this buffer, and a file descriptor to send along (CPU) or None."""
        ...

    def free(self) -> None:
        ...


class Allocator(Protocol):
    def allocate(self, name: str, nbytes: int) -> SharedBuffer: ...


# A memfd's size is fixed once set, and no other seal may be added. A runner keeps a descriptor of each buffer it
# maps (Python's mmap holds a duplicate): a candidate truncated one and the judge's own mapping died of SIGBUS on its
# next touch (every scenario a harness_error, development machine, 2026-12-05); a write seal added by the runner
# would refuse the trusted runners' writable mappings.
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


@dataclass
class MemfdBuffer:
    """CPU: an anonymous shared-memory file, mapped here and sent to the runner by descriptor; sealed at its size."""

    id: str
    nbytes: int
    fd: int = -1
    region: mmap.mmap | None = None
    views: list[Any] = field(default_factory=list)

    @classmethod
    def create(cls, name: str, nbytes: int) -> MemfdBuffer:
        fd = os.memfd_create(f"quaere-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, max(1, nbytes))
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        region = mmap.mmap(fd, max(1, nbytes), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        return cls(name, nbytes, fd, region)

    def typed(self, dtype: str, shape: tuple[int, ...], offset_bytes: int = 0) -> Any:
        import numpy

        count = math.prod(shape)
        view = numpy.frombuffer(self.region, dtype=dtype, count=count, offset=offset_bytes).reshape(shape)
        return view

    def export(self) -> tuple[BufferSpec, int | None]:
        return BufferSpec(id=self.id, kind="fd", nbytes=max(1, self.nbytes)), self.fd

    def free(self) -> None:
        if self.region is not None:
            try:
                self.region.close()
            except BufferError:  # a view still refers to it: the mapping goes when the last view does
                pass
            self.region = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class MemfdAllocator:
    def allocate(self, name: str, nbytes: int) -> MemfdBuffer:
        return MemfdBuffer.create(name, nbytes)


class _CudaArray:
    """A minimal ``__cuda_array_interface__`` so torch can view a raw device pointer without copying."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (pointer, False),
                                         "version": 3, "strides": None}


@dataclass
class CudaBuffer:
    """GPU: one ``cuMemAlloc`` allocation, exported by IPC handle; torch views for the judge's work."""

    id: str
    nbytes: int
    driver: Any
    pointer: int
    raw: Any  # uint8 torch tensor over the whole allocation

    def typed(self, dtype: str, shape: tuple[int, ...], offset_bytes: int = 0) -> Any:
        import torch

        count = math.prod(shape)
        chunk = self.raw[offset_bytes : offset_bytes + count * DTYPE_BYTES[dtype]]
        return chunk.view(getattr(torch, dtype)).view(shape)

    def export(self) -> tuple[BufferSpec, int | None]:
        handle = self.driver.ipc_handle(self.pointer).hex()
        return BufferSpec(id=self.id, kind="ipc", nbytes=max(1, self.nbytes), handle=handle), None

    def free(self) -> None:
        if self.pointer:
            self.raw = None
            self.driver.free(self.pointer)
            self.pointer = 0


class CudaAllocator:
    """Allocates in the current (torch's primary) context of the judge."""

    def __init__(self) -> None:
        import torch

        from quaere.runner.cuda import Driver

        torch.cuda.init()
        torch.empty(1, device="cuda")  # makes the primary context current on this thread
        self.driver = Driver.load()
        self.torch = torch

    def allocate(self, name: str, nbytes: int) -> CudaBuffer:
        size = max(1, nbytes)
        pointer = self.driver.alloc(size)
        raw = self.torch.as_tensor(_CudaArray(pointer, size), device="cuda")
        return CudaBuffer(name, size, self.driver, pointer, raw)


def allocator_for(device: str) -> Allocator:
    return MemfdAllocator() if device == "cpu" else CudaAllocator()


@dataclass
class BufferPool:
    """Shared buffers kept across scenarios, one per role ('in-q', 'out0-o', 'workspace'...), grown when a
    scenario needs more. Allocating and mapping a CUDA IPC buffer costs milliseconds; a pool pays it once
    per role and size class rather than per scenario. A buffer replaced by a larger one is *retired*: the
    judge unmaps it from every runner before it is freed (:meth:`take_retired`)."""

    allocator: Allocator
    buffers: dict[str, SharedBuffer] = field(default_factory=dict)
    retired: list[SharedBuffer] = field(default_factory=list)
    generation: int = 0

    def get(self, role: str, nbytes: int) -> SharedBuffer:
        """The role's buffer, at least ``nbytes`` long (a new one, 1.5x larger, when it is too small)."""
        current = self.buffers.get(role)
        if current is not None and current.nbytes >= nbytes:
            return current
        if current is not None:
            self.retired.append(current)
        self.generation += 1
        size = max(nbytes, int(current.nbytes * 1.5)) if current is not None else nbytes
        self.buffers[role] = self.allocator.allocate(f"{role}#{self.generation}", size)
        return self.buffers[role]

    def take_retired(self) -> list[SharedBuffer]:
        """The retired buffers (the caller unmaps them everywhere, then frees them)."""
        retired, self.retired = self.retired, []
        return retired

    def close(self) -> None:
        for buffer in [*self.buffers.values(), *self.take_retired()]:
            buffer.free()
        self.buffers.clear()
