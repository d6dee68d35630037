"""The `autograph` command of the installed package: runs the CLI built with it (autograph/bin), or, for a
command on a .pt2 (torch.export) model, the export path's commands (export_cli.py)."""
import os
import sys

from ._library import cli_path


def main() -> int:
    from . import export_cli
    if export_cli.wants(sys.argv[1:]):  # a .pt2 (torch.export) model: the export path, in Python
        return export_cli.main(sys.argv[1:])
    path = cli_path()
    if not os.path.exists(path):
        print(f"autograph: the CLI is not installed ({path} is missing); reinstall the package "
              "(pip install --no-build-isolation .) or build it with scripts/build.sh", file=sys.stderr)
        return 1
    os.execv(path, ["autograph", *sys.argv[1:]])  # replaces this process: the CLI's exit status is the command's
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
