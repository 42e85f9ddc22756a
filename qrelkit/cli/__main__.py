from qrelkit.cli import script

script()
