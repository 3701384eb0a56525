"""Running a scenario: the drivers (the simulator in :mod:`ratelab.run.runner`, real UDP in
:mod:`ratelab.run.live`) and what a finished run writes (:mod:`ratelab.run.results`)."""
