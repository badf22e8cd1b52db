import sys

from transcripts.cli import main

sys.exit(main())
