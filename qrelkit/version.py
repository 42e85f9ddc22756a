"""qrelkit's version, in a module of its own: whatever reports it (a page's footer, `--version`) reads
it here, not from the package's face, which imports the API above everything else."""

__version__ = "0.1.0"
