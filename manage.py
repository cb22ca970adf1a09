#!/usr/bin/env python
import os
import sys


def _generate_argv(argv: list[str]) -> list[str]:
    """`generate --settings pre,post` names generation settings (the contract), but Django reads a global --settings
    as its settings module before any command runs; hand it to the command as --contexts instead."""
    if argv[1:2] != ["generate"]:
        return argv
    renamed = []
    for arg in argv:
        if arg == "--settings":
            arg = "--contexts"
        elif arg.startswith("--settings="):
            arg = "--contexts=" + arg.removeprefix("--settings=")
        renamed.append(arg)
    return renamed


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(_generate_argv(sys.argv))


if __name__ == "__main__":
    main()
