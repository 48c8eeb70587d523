import sys

from memory_engine.cli import main

sys.exit(main())
