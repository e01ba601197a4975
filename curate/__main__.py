import sys

from curate.cli.main import main

sys.exit(main())
