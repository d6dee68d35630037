"""What optimize tells the user while it works: the "autograph" logger, and progress lines."""
import logging
import sys

logger = logging.getLogger("autograph")


def progress(message: str) -> None:
    """What optimize is doing while Inductor compiles (a slow step, part by part): on a terminal, a line on
    stderr; elsewhere the "autograph" logger's info."""
    if sys.stderr.isatty():
        print(f"autograph: {message}", file=sys.stderr, flush=True)
    else:
        logger.info("autograph: %s", message)


__all__ = ["logger", "progress"]
