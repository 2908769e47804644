"""Runs INSIDE the sandbox (standard library only, `python3 -I -S`): 127.0.0.1:PORT -> the proxy's Unix socket.

The sandbox's network namespace has nothing but its own loopback, and pip, npm, git and curl speak TCP proxies
only; this relay listens on the sandbox's loopback and hands each connection, byte for byte, to the Unix socket
that coder's proxy (outside) listens on. It decides nothing: every decision is the proxy's.

It binds before it forks, so when the starting command returns the port is ready; the child leaves the shell's
process tree (the parent exits, the child is adopted by the sandbox's init), so interrupting a command's process
tree does not take the network down with it, and it ends with the sandbox (its pid namespace).
"""

import os
import socket
import sys
import threading
import time


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(conn: socket.socket, path: str) -> None:
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.sendall(b"HTTP/1.1 502 coder's network proxy has stopped\r\nContent-Length: 0\r\n"
                     b"Connection: close\r\n\r\n")
        conn.close()
        up.close()
        return
    back = threading.Thread(target=_pump, args=(up, conn), daemon=True)
    back.start()
    _pump(conn, up)
    back.join()
    conn.close()
    up.close()


def main() -> int:
    port, path = int(sys.argv[1]), sys.argv[2]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except OSError as exc:
        print(f"coder-relay-failed: 127.0.0.1:{port}: {exc}", file=sys.stderr)
        return 1
    if os.fork():
        return 0
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while True:  # a flood from inside (no threads or descriptors left) drops connections, never the relay
        try:
            conn, _ = listener.accept()
        except OSError:
            time.sleep(0.05)
            continue
        try:
            threading.Thread(target=_serve, args=(conn, path), daemon=True).start()
        except RuntimeError:
            conn.close()


if __name__ == "__main__":
    sys.exit(main())
