import sys

from vlmdesk.cli import main

sys.exit(main())
