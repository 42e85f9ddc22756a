from qrelkit.cli import main

main()
