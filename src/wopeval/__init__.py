"""wopeval: an OpenWOP v2 host that turns real agent runs into regression tests."""

__version__ = "0.1.0"
