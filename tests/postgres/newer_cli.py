"""`signoff` as the newer release of the rolling-upgrade tests runs it: it knows the test's
migration from the future (`SIGNOFF_UPGRADE_FUTURE`, see `upgrade_agent`).

    python newer_cli.py db migrate [--stop-the-world]
"""

import upgrade_agent  # noqa: F401  (the newer release: one migration more)

from bot.cli import main

if __name__ == "__main__":
    main()
