"""The metrics core: measures (:mod:`.measures`), numpy kernels (:mod:`.ranking`), array input (:mod:`.arrays`)."""

from rankbridge.metrics.arrays import table_from_arrays
from rankbridge.metrics.measures import MEASURES, Measure, parse_measure, parse_measures
from rankbridge.metrics.ranking import HitTable, build_table, compute

__all__ = [
    "MEASURES",
    "HitTable",
    "Measure",
    "build_table",
    "compute",
    "parse_measure",
    "parse_measures",
    "table_from_arrays",
]
