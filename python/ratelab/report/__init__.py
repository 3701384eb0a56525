"""What ratelab shows: HTML pages (:mod:`.page`, :mod:`.run_report`, :mod:`.leaderboard`),
per-run plots (:mod:`.plots`), comparison figures (:mod:`.figures`, :mod:`.compare`) and the
utilization/delay trade-off (:mod:`.tradeoff`)."""
