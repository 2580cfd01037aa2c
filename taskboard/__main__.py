import sys

if sys.argv[1:2] == ["merge-driver"]:  # git starts it once per file both sides changed: the lean way in
    from .git.driver import main as driver

    sys.exit(driver(sys.argv[2:]))

from .cli.app import main

sys.exit(main())
