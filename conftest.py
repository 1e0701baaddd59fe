"""Collection settings for the doctests under src/ (pytest reads this file before collecting).

Deprecated alias modules warn when imported, which the doctest collector would do (warnings are errors in
this suite); tests/test_deprecated_aliases.py imports each one and checks its warning instead.
"""

collect_ignore = [
    "src/rankbridge/compare.py",
    "src/rankbridge/gate.py",
    # rankbridge.callbacks and rankbridge.adapters: tests/test_capture_paths.py checks their warnings
    "src/rankbridge/adapters",
    "src/rankbridge/callbacks",
]
