"""``lowerkit view DUMP_DIR``: the dump's stages as graphs in Model Explorer, served on
127.0.0.1 by a child process until Ctrl-C (needs the extra ``lowerkit[view]``)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dump", metavar="DUMP_DIR", help="a folder written by `lowerkit dump`")
    p.add_argument("--port", type=int, default=None,
                   help="first port to try (default: 8080, then the next free one)")


def main(args: argparse.Namespace) -> int:
    import signal
    import sys

    from lowerkit.tools import view

    from ._console import console as console_

    console = console_()
    viewer = view.start(args.dump, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop the server on `kill` too
    try:
        graphs = sorted(viewer.directory.glob("*.graph.json"))
        console.print(f"Model Explorer: {viewer.url}/  (serving {viewer.directory})")
        console.print(f"stages, each linked to its graph and to a comparison with the stage "
                      f"before: {(viewer.directory / 'index.html').as_uri()}")
        if graphs:
            console.print(f"last stage: {viewer.stage_url(graphs[-1].name)}", soft_wrap=True)
        console.print("Ctrl-C stops the server.")
        viewer.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.stop()
    return 0
