"""The package version, in a module of its own so any part of kioku can import it cycle-free."""

__version__ = "0.1.0"
