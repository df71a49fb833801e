"""The judge's shared buffers on the CPU (memfds) against a runner that holds their descriptors, as every runner does
(Python's mmap keeps a duplicate of the descriptor it maps): truncated, the judge's own mapping died of SIGBUS on
its next touch, every scenario a harness_error (development machine, 2026-12-05). Each buffer is sealed at its size."""

from __future__ import annotations

import fcntl
import os

import pytest

from quaere.evaluate.shared import MemfdBuffer


@pytest.fixture
def buffer():
    created = MemfdBuffer.create("in-x", 4096)
    yield created
    created.free()


def test_a_runner_holding_the_descriptor_cannot_resize_the_judges_buffer(buffer) -> None:
    view = buffer.typed("float32", (1024,))
    view[:] = 1.5
    held = os.dup(buffer.fd)  # the runner's copy
    try:
        for resize in (lambda: os.ftruncate(held, 0), lambda: os.ftruncate(held, 8192),
                       lambda: os.posix_fallocate(held, 4096, 4096)):
            with pytest.raises(PermissionError):
                resize()
        assert os.fstat(held).st_size == 4096
        assert float(view.sum()) == 1.5 * 1024  # the judge's mapping still reads
    finally:
        os.close(held)


F_SEAL_FUTURE_WRITE = 0x10  # linux/fcntl.h (Linux >= 5.1); Python's fcntl names it from 3.12 only


@pytest.mark.parametrize("seal", [fcntl.F_SEAL_WRITE, F_SEAL_FUTURE_WRITE], ids=["write", "future_write"])
def test_nor_seal_it_against_the_trusted_runners_writes(buffer, seal: int) -> None:
    """A write seal added by the candidate's runner would refuse the other runners' writable mappings (the
    trusted kernels map the same buffers). No seal may be added (EPERM; F_SEAL_WRITE alone would answer EBUSY
    while the judge's mapping is writable)."""
    held = os.dup(buffer.fd)
    try:
        with pytest.raises(PermissionError):
            fcntl.fcntl(held, fcntl.F_ADD_SEALS, seal)
    finally:
        os.close(held)
