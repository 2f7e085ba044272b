"""No network: a full index -> export -> compare -> verify (and text-overlap) run opens no
socket and imports no network client.

tests/unit/test_project_guards.py (INDEX helper) scans the sources statically. This is
the dynamic half: a fresh interpreter (so ``sys.modules`` starts clean, unpolluted by
pytest and its plugins) forbids socket creation twice over (``socket.socket``,
``socket.create_connection``, ``getaddrinfo``... patched to raise, and an audit hook
that records and refuses ``socket.*`` events, which also catches sockets made from C),
runs the whole pipeline through the public API and the CLI entry point, and reports any
network client module that appeared in ``sys.modules`` during the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Client modules whose import would mean the product talks to a network.
NETWORK_CLIENTS = ("http.client", "urllib.request", "ftplib", "smtplib", "poplib", "imaplib", "nntplib",
                   "telnetlib", "xmlrpc.client", "socketserver", "ssl", "requests", "urllib3", "httpx",
                   "aiohttp", "websocket", "websockets", "paramiko", "grpc", "zmq", "PySide6.QtNetwork")

_RUN = r"""
import json, socket, sys
from pathlib import Path

before = set(sys.modules)
events = []

def hook(event, args):
    if event.startswith("socket.") or event in ("urllib.Request", "http.client.connect", "ftplib.connect",
                                                 "smtplib.connect"):
        events.append(event)
        raise PermissionError(f"network forbidden in this test: {event}")

sys.addaudithook(hook)

def forbidden(*a, **k):
    raise PermissionError("network forbidden in this test")

for name in ("socket", "create_connection", "create_server", "socketpair", "fromfd", "getaddrinfo",
             "gethostbyname", "gethostbyname_ex"):
    setattr(socket, name, forbidden)

from overlap_desktop import api
from overlap_desktop.cli.main import main

corpus, work = Path(sys.argv[1]), Path(sys.argv[2])
cfg = api.load_config(environ={})
index = work / "index"
api.index_paths([corpus], index=index, config=cfg)
with api.open_index(index, create=False) as idx:
    api.export_manifest(idx, work / "offer.ovlm", label="offline")
report = api.compare(work / "offer.ovlm", index, config=cfg, floor_seconds=2.0)
api.write_report_html(report, work / "report.html")
api.write_report_json(report, work / "report.json")
api.write_report_csv(report, work / "report.csv")
verify = api.verify_delivery(work / "offer.ovlm", corpus, threads=2)
(work / "test.txt").write_text("the quick brown fox jumps over the lazy dog near the river bank today\n")
(work / "train.txt").write_text("a b c the quick brown fox jumps over the lazy dog near the river bank\n" * 50)
text = api.text_overlap([work / "test.txt"], [work / "train.txt"], n=8, workers=2)
codes = [main(["index", str(corpus), "--index", str(index), "-q"]),
         main(["compare", str(work / "offer.ovlm"), "--index", str(index), "-q"]),
         main(["verify", str(work / "offer.ovlm"), "--data", str(corpus), "-q"])]
events_during_run = list(events)
try:  # the guard itself works: a socket now is refused and recorded
    socket.socket()
    guard = False
except PermissionError:
    guard = True
import _socket
try:
    _socket.socket()  # the C-level constructor, behind the patched module attribute
    guard_c = False
except PermissionError:
    guard_c = True
print("RESULT " + json.dumps({
    "guard": guard, "guard_c": guard_c,
    "new_modules": sorted(set(sys.modules) - before),
    "socket_events": events_during_run,
    "overlap": report.overlap_percent,
    "verified": verify.matched,
    "text_hits": len(text.matched_examples),
    "exit_codes": codes,
}))
"""


def test_full_run_without_network(small_corpus: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env = {k: v for k, v in env.items() if not k.startswith(("OVERLAP_", "HTTP", "HTTPS", "http_", "https_"))}
    proc = subprocess.run([sys.executable, "-c", _RUN, str(small_corpus), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    clients = [m for m in result["new_modules"] if any(m == c or m.startswith(c + ".") for c in NETWORK_CLIENTS)]
    print(f"\nno network: index/export/compare/verify/text-overlap/CLI ran with sockets forbidden; "
          f"{len(result['new_modules'])} modules imported, network clients among them: {clients}; "
          f"socket events: {result['socket_events']}; overlap {result['overlap']:.0f}%, "
          f"verified {result['verified']}, exit codes {result['exit_codes']}")
    assert result["socket_events"] == []
    assert clients == []
    # The run really happened (so the absence of sockets means something).
    assert result["overlap"] > 90 and result["verified"] == 5
    assert result["text_hits"] == 1
    assert result["exit_codes"] == [0, 0, 0]
    assert result["guard"] and result["guard_c"], "the socket guard does not work: this test could not fail"
