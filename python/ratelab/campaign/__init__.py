"""Campaigns: many runs from one plan (:mod:`.plan`), executed locally or on Ray
(:mod:`.engines`, :mod:`.sweep`), stored with resume (:mod:`.store`), summarised for DuckDB
(:mod:`.summary`) and kept in object stores (:mod:`.remote`)."""
