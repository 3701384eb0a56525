"""How a campaign folder is laid out: the files that mark a run done or failed, the work area,
and the columns the summary tables always have. Shared by the store (which writes them) and the
summary (which reads them)."""

from __future__ import annotations

from pathlib import Path

DONE_FILE = "flows.parquet"
ERROR_FILE = "error.json"
TMP_DIR = ".tmp"

#: Columns that runs before the reverse bottleneck (RFC 8867 5.3) did not write, or that only runs
#: of scenarios with a ``[reverse_link]`` fill: the ``flows`` view always has them (NULL where a
#: run has none), so one query works over old and new runs alike.
OPTIONAL_FLOW_COLUMNS: dict[str, str] = {
    "return_packets_sent": "BIGINT", "return_packets_lost": "BIGINT", "return_bytes_sent": "BIGINT",
    "return_loss_rate": "DOUBLE", "link_control_kbps_mean": "DOUBLE",
    "reverse_link_utilization": "DOUBLE", "reverse_link_jain_index": "DOUBLE", "reverse_link_loss_rate": "DOUBLE",
    "reverse_link_capacity_kbps_mean": "DOUBLE", "reverse_link_queue_drops": "BIGINT",
    "reverse_link_random_drops": "BIGINT", "reverse_link_control_kbps_mean": "DOUBLE",
}
#: Run-level columns of the ``runs`` view (one value per run, taken from its flows' rows).
RUN_COLUMNS = ["controller_name", "scenario_name", "link_utilization", "link_jain_index", "link_loss_rate",
               "link_capacity_kbps_mean", "link_control_kbps_mean", "reverse_link_utilization",
               "reverse_link_jain_index", "reverse_link_loss_rate", "reverse_link_capacity_kbps_mean",
               "reverse_link_control_kbps_mean", "duration_s", "wall_seconds", "sim_speed"]


def has_files(root: Path, name: str) -> bool:
    return any(root.glob(f"controller=*/scenario=*/seed=*/{name}"))
