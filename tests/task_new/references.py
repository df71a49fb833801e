"""References the tests hand to ``quaere task new``: good ones, and each way a reference can be bad."""

from __future__ import annotations

import numpy as np


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_raises(x):
    raise ValueError("this reference is broken")


def softmax_transposed(x):
    return softmax(x).T.copy()


def softmax_half(x):
    return softmax(x).astype(np.float16)


def softmax_extra(x, temperature):
    return softmax(x / temperature)


def zeros_like(x):
    return np.zeros_like(x)


def doubled(x):
    return x * 2


def softmax_columns(x):
    """Not row-wise: each output row depends on every input row."""
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
