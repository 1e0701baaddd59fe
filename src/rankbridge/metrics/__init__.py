"""The metrics core: measure definitions (:mod:`.measures`) and numpy kernels (:mod:`.ranking`)."""

from rankbridge.metrics.measures import MEASURES, Measure, parse_measure, parse_measures
from rankbridge.metrics.ranking import HitTable, build_table, compute, table_from_arrays

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
