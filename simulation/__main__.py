"""``python -m simulation``: the main job (README command 1); see :mod:`simulation.spark_job`."""

import sys

from simulation.spark_job import main

sys.exit(main())
