"""`python -m memmesh` runs the `mem` command."""

from memmesh.cli.main import main

raise SystemExit(main())
