import sys

from rldse.cli import main

sys.exit(main())
