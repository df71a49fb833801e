"""bench/kernel/cta_probe.py: a launch's idle share and tail from per-CTA probe records (no GPU)."""

from __future__ import annotations

import pytest
from tests.fa_task.bench_scripts import load_bench_script


def load_module():
    return load_bench_script("cta_probe")


def test_decode_splits_the_work_word():
    m = load_module()
    recs = m.decode([10, 20, 30, 3 | (17 << 32), 11, 21, 31, 2 | (9 << 32), 0, 0, 0, 0], 2)
    assert [(r.tiles, r.kv_blocks) for r in recs] == [(3, 17), (2, 9)]
    assert recs[1].start_ns == 11 and recs[1].consumers_done_ns == 31


def test_decode_refuses_a_short_array():
    with pytest.raises(ValueError, match="8 needed for 2 CTAs"):
        load_module().decode([0] * 7, 2)


def test_idle_share_counts_late_starts_and_early_exits():
    m = load_module()
    rec = m.CtaRecord
    # Span 0..1000 ns over 2 CTAs (2000 CTA-ns): the second starts 100 late and exits 300 early.
    prof = m.profile([rec(0, 900, 1000, 2, 10), rec(100, 600, 700, 1, 6)])
    assert prof.span_us == pytest.approx(1.0)
    assert prof.idle_pct == pytest.approx(100 * 400 / 2000)
    assert prof.late_start_pct == pytest.approx(100 * 100 / 2000)
    assert prof.tail_max_us == pytest.approx(0.3)
    assert prof.drain_p50_us == pytest.approx(0.1)
    assert (prof.kv_blocks_min, prof.kv_blocks_max, prof.tiles_min, prof.tiles_max) == (6, 10, 1, 2)


def test_records_must_account_for_every_tile():
    m = load_module()
    recs = [m.CtaRecord(0, 5, 10, 3, 9), m.CtaRecord(0, 5, 10, 2, 6)]
    m.check_tiles(recs, 5)
    with pytest.raises(ValueError, match="drew 5 tiles, the launch has 8"):
        m.check_tiles(recs, 8)


def test_records_from_two_launches_are_refused():
    m = load_module()
    with pytest.raises(ValueError, match="not from one launch"):
        m.profile([m.CtaRecord(500, 0, 100, 1, 1)])


@pytest.mark.parametrize("text", ["4,4096,16,16,128", "4,4096,16,16,128,x"])
def test_config_errors_name_the_expected_form(text):
    with pytest.raises(ValueError, match="B,S,HQ,HKV,D,CAUSAL"):
        load_module().parse_config(text)
