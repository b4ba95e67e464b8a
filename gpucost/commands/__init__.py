"""CLI subcommands, one module each: NAME, HELP, add_arguments(parser), run(args), render_text(result).

Modules here may import argparse; they import engines (and pandas) inside ``run`` only.
"""

#: registered subcommands, in the order ``gpucost --help`` lists them
COMMANDS: list[str] = ["gpus"]
