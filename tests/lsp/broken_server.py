"""Language servers that misbehave, for tests/lsp/test_lsp_broken.py. Built on pygls's real server.

    python broken_server.py crash-on-open   answers `initialize`, then exits when a document opens
    python broken_server.py silent          answers `initialize`, never publishes diagnostics
    python broken_server.py mute            reads its input and never writes a byte (not even `initialize`)
    python broken_server.py exit            exits at once (a command that is not a server)
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    mode = sys.argv[1]
    if mode == "exit":
        sys.stderr.write("broken_server: exiting at once\n")
        sys.exit(7)
    if mode == "mute":
        while sys.stdin.buffer.read(1):
            pass
        time.sleep(60)
        return
    from lsprotocol import types as t
    from pygls.lsp.server import LanguageServer

    server = LanguageServer("broken", "0")

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: t.DidOpenTextDocumentParams) -> None:
        if mode == "crash-on-open":
            sys.stderr.write("broken_server: crashing on didOpen\n")
            sys.stderr.flush()
            os._exit(3)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: t.DidChangeTextDocumentParams) -> None:
        return None

    server.start_io()


if __name__ == "__main__":
    main()
