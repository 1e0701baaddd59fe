"""The package version (a leaf: every module may import it; pyproject.toml reads it from here)."""

__version__ = "0.1.0"
