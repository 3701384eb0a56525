"""Example Python controllers (docs/bring-your-own.md); run one with ``-c ratelab.examples.aimd:Aimd``."""
