-- Per scenario and controller of an RMCAT campaign (e.g. tools/rmcat-ratelab-cc.toml): means over
-- seeds of the media flows' summed throughput (± half the range over seeds), the competing TCP
-- flows' throughput, the media flows' mean p95 queuing delay and loss, the bottleneck's
-- utilization and Jain index. Used by docs/controllers/ratelab-cc.md:
--   ratelab query rmcat-ratelab-cc --out /tmp/rc --format csv tools/rmcat_table.sql
WITH per_run AS (
  SELECT scenario, controller, seed,
         sum(throughput_kbps) FILTER (WHERE kind = 'media') AS media_kbps,
         sum(throughput_kbps) FILTER (WHERE kind <> 'media') AS tcp_kbps,
         avg(queue_delay_ms_p95) FILTER (WHERE kind = 'media') AS q95,
         avg(loss_rate) FILTER (WHERE kind = 'media') AS loss,
         any_value(link_utilization) AS link_util,
         any_value(link_jain_index) AS jain
  FROM flows GROUP BY ALL)
SELECT scenario, controller,
       round(avg(media_kbps)) AS media_kbps, round((max(media_kbps) - min(media_kbps)) / 2) AS media_pm,
       round(avg(tcp_kbps)) AS tcp_kbps, round(avg(q95)) AS q95_ms, round(100 * avg(loss), 2) AS loss_pct,
       round(100 * avg(link_util), 1) AS link_util_pct, round(avg(jain), 3) AS jain
FROM per_run GROUP BY ALL ORDER BY scenario, controller
