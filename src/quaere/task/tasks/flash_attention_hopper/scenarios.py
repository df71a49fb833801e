"""Scenarios of the flash_attention_hopper task: named axes, a covering design, and the benchmark set.

Pure Python (no torch), so the scenario list, its ids and its coverage are checked without a GPU.

Correctness design. The axes are head_dim (64/128/256), causal (off/on), head layout (MHA, GQA 4:1,
GQA 8:1, MQA), (seqlen_q, seqlen_k) pairs from 1 to 16k, batch 1..8 and softmax scale (default
1/sqrt(head_dim), a custom 0.2, zero, or the default's negation). A full cross product would be
thousands of scenarios; instead:

- ``grid``: every (head_dim, causal, seqlen pair) triple (3 x 2 x 24 = 144). The layout rotates with
  (pair + head_dim + 3 causal) mod 4, so each (head_dim, causal) pair and each seqlen pair meets all four
  layouts; head counts, batch and scale rotate with other strides. The seqlen pairs straddle every tile
  size a kernel is likely to use (1, 7, 63/64/65, 127/128/129, 176/177, 191/193, 255/256/257, 511/512,
  1000, 2047, 4097) and include Sq < Sk (decode-like) and Sq > Sk, which with a causal mask (aligned
  bottom-right) leaves rows that no key may attend.
- ``batch``: every batch 1..8 with every head_dim (24), on moderate shapes.
- ``edge``: single keys, single queries, mostly masked blocks (12).
- ``long``: nine long scenarios up to 16384 x 16384, batch 1 and few heads, so they stay cheap.
- ``signed``: a zero and a negative scale (-1/sqrt(head_dim)) for each head_dim (6): any finite scale is in the
  contract, and a kernel that takes its running max over raw scores before scaling is right only for a positive
  one.

Work is capped per scenario (batch x heads_q x seqlen_q x seqlen_k <= 2**25 outside ``long``): the batch is
halved until the shape fits, so most scenarios are small and a full correctness pass takes seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HEAD_DIMS = (64, 128, 256)
LAYOUTS = ("mha", "gqa4", "gqa8", "mqa")
# (heads_q, heads_kv) per layout, rotated through so grid/threading bugs in the head index show up.
LAYOUT_HEADS: dict[str, tuple[tuple[int, int], ...]] = {
    "mha": ((2, 2), (3, 3), (1, 1), (4, 4)),
    "gqa4": ((8, 2), (4, 1), (12, 3)),
    "gqa8": ((16, 2), (8, 1)),
    "mqa": ((5, 1), (3, 1), (2, 1)),
}
BATCHES = (1, 2, 3, 4, 5, 6, 7, 8)
CUSTOM_SCALE = 0.2  # sharper than every default (1/8, 1/sqrt(128), 1/16): a scale that is ignored shows
SEQLEN_PAIRS: tuple[tuple[int, int], ...] = (
    (1, 1), (1, 129), (3, 300), (7, 7), (7, 1000), (63, 63), (64, 64), (65, 65), (65, 7),
    (127, 129), (129, 127), (128, 128), (129, 2047), (176, 177), (191, 193), (255, 255), (256, 257),
    (512, 511), (1000, 1000), (1000, 63), (2047, 2047), (2047, 129), (63, 4097), (4097, 1000),
)
BATCH_PAIRS: tuple[tuple[int, int], ...] = ((65, 65), (129, 63), (100, 1000), (257, 257))
MAX_WORK = 2**25  # batch * heads_q * seqlen_q * seqlen_k outside the long block

# (head_dim, causal, layout, heads_q, heads_kv, batch, seqlen_q, seqlen_k, custom scale)
EDGE: tuple[tuple[int, bool, str, int, int, int, int, int, bool], ...] = (
    (64, True, "mha", 2, 2, 2, 1000, 1, False),  # one key: only the last row attends it
    (256, False, "gqa4", 4, 1, 1, 129, 1, True),  # one key, every row: o = v
    (128, True, "mqa", 3, 1, 3, 1, 1, False),
    (128, True, "gqa8", 8, 1, 1, 1, 4097, True),  # one query sees every key (bottom-right)
    (64, False, "mha", 1, 1, 8, 2, 3, False),
    (256, True, "mha", 2, 2, 1, 4097, 65, False),  # 4032 fully masked rows
    (128, True, "gqa4", 8, 2, 2, 130, 2, True),  # fully masked query blocks before the last one
    (64, True, "gqa8", 16, 2, 1, 8, 1000, False),
    (256, False, "mqa", 6, 1, 1, 3, 2047, True),
    (128, False, "mha", 1, 1, 1, 16, 16, False),
    (64, True, "mqa", 2, 1, 4, 190, 64, True),
    (256, True, "gqa8", 8, 1, 1, 64, 63, False),  # exactly one fully masked row
)
LONG: tuple[tuple[int, bool, str, int, int, int, int, int, bool], ...] = (
    (64, True, "mha", 2, 2, 1, 16384, 16384, False),
    (128, False, "mqa", 4, 1, 1, 16384, 16384, False),
    (256, True, "gqa8", 8, 1, 1, 8192, 8192, False),
    (128, True, "mha", 1, 1, 1, 1, 16384, True),
    (128, True, "gqa4", 4, 1, 1, 16384, 4097, False),
    (64, False, "gqa4", 8, 2, 1, 4097, 16384, True),
    (256, False, "mha", 1, 1, 1, 16384, 1, False),
    (128, True, "mha", 2, 2, 1, 8191, 8191, True),
    (64, True, "mha", 1, 1, 1, 16383, 16383, False),
)


# (head_dim, causal, layout, heads_q, heads_kv, batch, seqlen_q, seqlen_k, scale label): "zero" or "negative"
SIGNED: tuple[tuple[int, bool, str, int, int, int, int, int, str], ...] = (
    (64, True, "gqa4", 8, 2, 2, 300, 300, "zero"),  # uniform weights over each row's allowed keys
    (64, False, "mha", 2, 2, 1, 129, 1000, "negative"),
    (128, False, "mqa", 3, 1, 2, 65, 257, "zero"),
    (128, True, "gqa8", 8, 1, 1, 1000, 1000, "negative"),
    (256, True, "mha", 2, 2, 1, 130, 64, "zero"),  # 66 fully masked rows
    (256, False, "gqa4", 4, 1, 1, 200, 777, "negative"),
)


class ScenarioError(ValueError):
    """A scenario's params are incomplete or inconsistent; the message names the scenario and the field."""


@dataclass(frozen=True)
class Shape:
    """The attention problem one scenario describes."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_kv: int
    head_dim: int
    causal: bool
    softmax_scale: float

    @classmethod
    def from_params(cls, params: Mapping[str, Any], scenario_id: str = "?") -> Shape:
        """Read a scenario's params; ``softmax_scale`` defaults to 1/sqrt(head_dim)."""
        values: dict[str, int] = {}
        for name in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim"):
            value = params.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ScenarioError(f"scenario '{scenario_id}': param '{name}' is {value!r}; expected an int >= 1")
            values[name] = value
        causal = params.get("causal")
        if not isinstance(causal, bool):
            raise ScenarioError(f"scenario '{scenario_id}': param 'causal' is {causal!r}; expected true or false")
        scale = params.get("softmax_scale", values["head_dim"] ** -0.5)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
            raise ScenarioError(
                f"scenario '{scenario_id}': param 'softmax_scale' is {scale!r}; expected a finite number"
            )
        if values["heads_q"] % values["heads_kv"]:
            raise ScenarioError(f"scenario '{scenario_id}': heads_q {values['heads_q']} is not a multiple of heads_kv")
        return cls(causal=causal, softmax_scale=float(scale), **values)

    @property
    def allowed_pairs(self) -> int:
        """(query, key) pairs the mask allows, per batch and head (see :func:`causal_pairs`)."""
        if not self.causal:
            return self.seqlen_q * self.seqlen_k
        return causal_pairs(self.seqlen_q, self.seqlen_k)


def causal_pairs(seqlen_q: int, seqlen_k: int) -> int:
    """Allowed pairs of a bottom-right causal mask: row i attends keys j <= i + seqlen_k - seqlen_q.

    Row i attends max(0, i + Sk - Sq + 1) keys; the r = min(Sq, Sk) non-empty rows attend Sk - r + 1, ...,
    Sk keys, so the total is r * Sk - r * (r - 1) / 2 (Sk (Sk + 1) / 2 when Sq >= Sk).
    """
    rows = min(seqlen_q, seqlen_k)
    return rows * seqlen_k - rows * (rows - 1) // 2


def flops(shape: Shape) -> float:
    """4 * B * Hq * D per allowed pair: 2 for the q.k product and 2 for p * v, per dimension."""
    return 4.0 * shape.batch * shape.heads_q * shape.head_dim * shape.allowed_pairs


def min_bytes(shape: Shape) -> float:
    """q, k, v read once, o written once (bf16), lse written once (fp32)."""
    b, d = shape.batch, shape.head_dim
    q_and_o = 2 * b * shape.seqlen_q * shape.heads_q * d
    k_and_v = 2 * b * shape.seqlen_k * shape.heads_kv * d
    return 2.0 * (q_and_o + k_and_v) + 4.0 * b * shape.heads_q * shape.seqlen_q



def _scale(label: str, d: int) -> tuple[float, str]:
    """The softmax scale a scale label names for head_dim ``d``, and the suffix it gives a scenario id."""
    if label == "custom":
        return CUSTOM_SCALE, f"-scale{CUSTOM_SCALE}"
    if label == "zero":
        return 0.0, "-scalezero"
    if label == "negative":
        return -(d**-0.5), "-scalenegative"
    return d**-0.5, ""


def _scenario(d: int, causal: bool, layout: str, hq: int, hkv: int, b: int, sq: int, sk: int, label: str) -> dict:
    """One correctness scenario; ``label`` is the scale's: default, custom, zero or negative (:func:`_scale`)."""
    scale, suffix = _scale(label, d)
    ident = f"d{d}-{'causal' if causal else 'noncausal'}-{layout}-h{hq}kv{hkv}-b{b}-sq{sq}-sk{sk}{suffix}"
    params = {
        "batch": b, "seqlen_q": sq, "seqlen_k": sk, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
        "causal": causal, "softmax_scale": scale, "layout": layout, "scale": label,
    }
    return {"id": ident, "params": params}


def _labelled(row: tuple) -> dict:
    """A scenario from an EDGE or LONG row, whose last field says whether its scale is the custom one."""
    return _scenario(*row[:-1], "custom" if row[-1] else "default")


def _capped_batch(batch: int, heads_q: int, sq: int, sk: int) -> int:
    while batch > 1 and batch * heads_q * sq * sk > MAX_WORK:
        batch //= 2
    return batch


def _grid() -> list[dict]:
    out = []
    for di, d in enumerate(HEAD_DIMS):
        for ci, causal in enumerate((False, True)):
            for pi, (sq, sk) in enumerate(SEQLEN_PAIRS):
                layout = LAYOUTS[(pi + di + 3 * ci) % 4]
                choices = LAYOUT_HEADS[layout]
                hq, hkv = choices[(pi + di + ci) % len(choices)]
                batch = _capped_batch(BATCHES[(3 * pi + di + 5 * ci) % len(BATCHES)], hq, sq, sk)
                label = "custom" if (pi + di + ci) % 3 == 0 else "default"
                out.append(_scenario(d, causal, layout, hq, hkv, batch, sq, sk, label))
    return out


def _batch_block() -> list[dict]:
    out = []
    for di, d in enumerate(HEAD_DIMS):
        for batch in BATCHES:
            layout = LAYOUTS[(batch + di) % 4]
            hq, hkv = LAYOUT_HEADS[layout][0]
            sq, sk = BATCH_PAIRS[(batch + 2 * di) % len(BATCH_PAIRS)]
            label = "custom" if (batch + di) % 4 == 0 else "default"
            out.append(_scenario(d, (batch + di) % 2 == 1, layout, hq, hkv, batch, sq, sk, label))
    return out


def correctness_scenarios() -> list[dict]:
    """All correctness scenarios as {"id", "params"} dicts, in a fixed order; ids are unique."""
    rows = (_grid() + _batch_block() + [_labelled(e) for e in EDGE] + [_labelled(e) for e in LONG]
            + [_scenario(*e) for e in SIGNED])
    seen: set[str] = set()
    for row in rows:
        if row["id"] in seen:
            raise AssertionError(f"duplicate scenario id {row['id']}: the design repeats a point")
        seen.add(row["id"])
    return rows


def _bench(d: int, hq: int, hkv: int, b: int, s: int, causal: bool) -> dict:
    heads = f"h{hq}" if hq == hkv else f"h{hq}kv{hkv}-b{b}"
    ident = f"d{d}-{heads}-s{s}-{'causal' if causal else 'noncausal'}"
    params = {
        "batch": b, "seqlen_q": s, "seqlen_k": s, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
        "causal": causal, "softmax_scale": d**-0.5,
    }
    return {"id": ident, "params": params}


TOKENS = 16384  # batch x seqlen of the benchmark set, 2048 hidden (heads x head_dim) for MHA


def benchmark_scenarios() -> list[dict]:
    """The 26 benchmark configurations of the task (issue 3), in a fixed order."""
    rows = []
    for d, h, seqlens in ((128, 16, (512, 1024, 2048, 4096, 8192, 16384)),
                          (64, 32, (1024, 4096, 16384)), (256, 8, (1024, 4096, 16384))):
        for s in seqlens:
            for causal in (False, True):
                rows.append(_bench(d, h, h, TOKENS // s, s, causal))
    rows.append(_bench(128, 32, 8, 1, 8192, True))
    rows.append(_bench(128, 64, 8, 2, 4096, True))
    return rows
