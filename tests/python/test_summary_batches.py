"""The summary reads new runs' flows files in bounded batches (issue 16 §2: bounded driver memory
on a 20,000-run campaign): the result does not depend on the batch size, a batch of older files
without a newer column still lines up, and the number of file reads per call is the batch size."""

from __future__ import annotations

import pyarrow.parquet as pq

from test_campaign_scale import _equals_full_rebuild, _run, _sorted


def test_batched_reads_equal_one_read_and_stay_within_the_batch(tmp_path, core, monkeypatch):
    import ratelab.campaign.summary as summary

    root = tmp_path / "camp"
    _run(tmp_path, root, range(1, 6))
    _run(tmp_path, root, range(1, 3), controller="oracle")
    # an older run file without one of the optional columns: its batch gets it as NULL
    old = root / "controller=oracle/scenario=tiny/seed=2/flows.parquet"
    t = pq.read_table(old)
    pq.write_table(t.drop_columns(["link_control_kbps_mean"]).replace_schema_metadata(t.schema.metadata), old)

    summary.rebuild_summary(root, full=True)
    one_read = _sorted(pq.read_table(root / "summary.parquet"))

    calls: list[int] = []
    real = summary._read_files
    monkeypatch.setattr(summary, "_read_files", lambda files: calls.append(len(files)) or real(files))
    monkeypatch.setattr(summary, "READ_BATCH", 2)
    summary.rebuild_summary(root, full=True)
    batched = _sorted(pq.read_table(root / "summary.parquet"))
    assert max(calls) <= 2 and sum(calls) >= 7  # every file read, never more than 2 per call
    assert batched.equals(one_read)
    assert batched.column("link_control_kbps_mean").null_count == 1
    _equals_full_rebuild(root, tmp_path)
