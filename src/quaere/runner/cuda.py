"""The few CUDA driver API calls the runner and the judge need, through ctypes on ``libcuda.so.1``.

The driver API (not the runtime) because ``libcuda`` ships with the driver on every CUDA machine, while a
runtime library would have to be found in a toolkit or a wheel. The runner works in the device's *primary*
context, the one a candidate built with nvcc (which links the CUDA runtime statically) attaches to, so its
stream and the buffers it maps are valid in the candidate's calls.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

CU_STREAM_NON_BLOCKING = 0x1
CU_EVENT_DEFAULT = 0x0
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
CUDA_ERROR_NOT_READY = 600
CU_STREAM_WAIT_VALUE_EQ = 0x1
IPC_HANDLE_BYTES = 64


class CudaError(RuntimeError):
    """A driver call failed; ``code`` is the CUresult. Sticky errors (an illegal address) leave the context
    unusable: the process that owns it must exit."""

    def __init__(self, call: str, code: int, text: str) -> None:
        super().__init__(f"{call} failed: CUDA error {code} ({text})")
        self.code = code


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * IPC_HANDLE_BYTES)]


@dataclass
class Driver:
    """A loaded ``libcuda``; every method raises :class:`CudaError` on a non-zero CUresult."""

    lib: ctypes.CDLL

    @classmethod
    def load(cls) -> Driver:
        return cls(ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_LOCAL))

    def _call(self, name: str, *args: object) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            text = ctypes.c_char_p()
            self.lib.cuGetErrorString(code, ctypes.byref(text))
            raise CudaError(name, code, (text.value or b"?").decode(errors="replace"))

    def primary_context(self, ordinal: int = 0) -> int:
        """Initialise the driver, retain device ``ordinal``'s primary context and make it current."""
        self._call("cuInit", 0)
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), ordinal)
        context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
        self._call("cuCtxSetCurrent", context)
        return int(context.value or 0)

    def stream(self, flags: int = CU_STREAM_NON_BLOCKING) -> int:
        stream = ctypes.c_void_p()
        self._call("cuStreamCreate", ctypes.byref(stream), flags)
        return int(stream.value or 0)

    def event(self) -> int:
        event = ctypes.c_void_p()
        self._call("cuEventCreate", ctypes.byref(event), CU_EVENT_DEFAULT)
        return int(event.value or 0)

    def record(self, event: int, stream: int) -> None:
        self._call("cuEventRecord", ctypes.c_void_p(event), ctypes.c_void_p(stream))

    def event_done(self, event: int) -> bool:
        code = self.lib.cuEventQuery(ctypes.c_void_p(event))
        if code == CUDA_ERROR_NOT_READY:
            return False
        if code != 0:
            self._call("cuEventQuery", ctypes.c_void_p(event))
        return True

    def elapsed_ms(self, start: int, end: int) -> float:
        value = ctypes.c_float()
        self._call("cuEventElapsedTime", ctypes.byref(value), ctypes.c_void_p(start), ctypes.c_void_p(end))
        return float(value.value)

    def synchronize(self) -> None:
        """Wait for all work of the current context, on every stream of every thread."""
        self._call("cuCtxSynchronize")

    def reset_persisting_l2(self) -> None:
        self._call("cuCtxResetPersistingL2Cache")

    def alloc(self, nbytes: int) -> int:
        pointer = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(max(1, nbytes)))
        return int(pointer.value)

    def free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", ctypes.c_uint64(pointer))

    def ipc_handle(self, pointer: int) -> bytes:
        """The IPC handle of an allocation made with :meth:`alloc` (the whole allocation, nothing else)."""
        handle = IpcHandle()
        self._call("cuIpcGetMemHandle", ctypes.byref(handle), ctypes.c_uint64(pointer))
        return bytes(handle)  # the whole struct: the field reads as a NUL-terminated string

    def ipc_open(self, handle: bytes) -> int:
        if len(handle) != IPC_HANDLE_BYTES:
            raise ValueError(f"an IPC handle has {IPC_HANDLE_BYTES} bytes, got {len(handle)}")
        pointer = ctypes.c_uint64()
        raw = IpcHandle()
        ctypes.memmove(ctypes.addressof(raw), handle, IPC_HANDLE_BYTES)
        function = self.lib.cuIpcOpenMemHandle_v2
        function.argtypes = [ctypes.POINTER(ctypes.c_uint64), IpcHandle, ctypes.c_uint]  # the handle by value
        self._call("cuIpcOpenMemHandle_v2", ctypes.byref(pointer), raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
        return int(pointer.value)

    def ipc_close(self, pointer: int) -> None:
        self._call("cuIpcCloseMemHandle", ctypes.c_uint64(pointer))

    def write_value(self, stream: int, address: int, value: int) -> None:
        """Enqueue a 32-bit write of ``value`` at device ``address`` on ``stream``, after everything enqueued
        there before it (with a memory fence: the default flags)."""
        self._call(_versioned(self.lib, "cuStreamWriteValue32"), ctypes.c_void_p(stream), ctypes.c_uint64(address),
                   ctypes.c_uint32(value), ctypes.c_uint(0))

    def wait_value(self, stream: int, address: int, value: int) -> None:
        """Enqueue a wait on ``stream`` until the 32-bit word at device ``address`` equals ``value``: the stream
        holds there, on the device, with no host in the loop."""
        self._call(_versioned(self.lib, "cuStreamWaitValue32"), ctypes.c_void_p(stream), ctypes.c_uint64(address),
                   ctypes.c_uint32(value), ctypes.c_uint(CU_STREAM_WAIT_VALUE_EQ))


def _versioned(lib: ctypes.CDLL, name: str) -> str:
    """``name``'s ``_v2`` entry point where the driver has one (CUDA 12's stream memory operations, on by
    default), else ``name``."""
    return f"{name}_v2" if hasattr(lib, f"{name}_v2") else name
