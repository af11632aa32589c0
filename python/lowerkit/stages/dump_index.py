"""The dump's index: ``index.json`` for tools and a self-contained ``index.html`` for people.

Per stage it gives the op histogram by dialect (drawn as bars), the number of functions and
dispatches, the file's size, the stage's time, a link to the file, and the ops that appeared
and disappeared since the previous stage. The page has no scripts and loads nothing from the
network, so it opens from a file anywhere, even where the browser is offline. Each stage also
links to its graph in Model Explorer and to two panes comparing it with the stage before;
those links point at the local server ``lowerkit view DIR`` starts (`lowerkit.tools.view`),
which writes the page again with its own address.
"""

from __future__ import annotations

import html
import json
import os
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

VIEW_HOST = "127.0.0.1"
VIEW_PORT = 8080  # Model Explorer's default: the index's links assume it until `lowerkit view` runs

EXPORT_OPS = ("flow.executable.export", "stream.executable.export", "hal.executable.export")
DISPATCH_REGIONS = ("flow.dispatch.region", "flow.dispatch.workgroups")


def dialects(ops: Counter) -> Counter:
    out: Counter = Counter()
    for name, n in ops.items():
        out[name.split(".", 1)[0]] += n
    return out


def function_count(ops: Counter) -> int:
    return sum(n for name, n in ops.items() if name.endswith(".func"))


def dispatch_count(ops: Counter) -> int:
    """Dispatch functions once IREE has formed them (exports), else dispatch regions."""
    return max(sum(ops.get(o, 0) for o in EXPORT_OPS), sum(ops.get(o, 0) for o in DISPATCH_REGIONS))


def graph_url(base: str, *panes: tuple[str | os.PathLike, list[str]]) -> str:
    """Model Explorer's address that opens each graph JSON file (with its graph ids, largest
    first) in a pane of its own: one file, one pane; two, side by side (a stage and the one
    before it), each pane on its file's largest graph."""
    data: dict = {"models": [{"url": str(Path(path).resolve())} for path, _ in panes]}
    if len(panes) > 1:
        states, seen = [], set()
        for path, ids in panes:
            graph = ids[0] if ids else ""
            # Model Explorer renames a graph id that an earlier file used: "main" -> "main (2)"
            selected = f"{graph} (2)" if graph in seen else graph
            seen.update(ids)
            states.append({"deepestExpandedGroupNodeIds": [], "selectedNodeId": "",
                           "selectedGraphId": selected,
                           "selectedCollectionLabel": Path(path).name[: -len(".graph.json")],
                           "widthFraction": 1 / len(panes)})
        data["uiState"] = {"paneStates": states}
    return f"{base.rstrip('/')}/?data={quote(json.dumps(data))}"


def build_index(entries: list, *, title: str, target: str | None = None,
                error: str | None = None) -> dict:
    """The index as plain data (what index.json holds), from a dump's entries."""
    stages, previous = [], None
    for e in entries:
        ops = Counter(e.ops)
        row = {
            "number": e.number, "name": e.name, "kind": e.kind, "build": e.build,
            "file": e.path.name + ("/" if e.path.is_dir() else ""),
            "seconds": e.seconds, "size": e.size,
            "ops": dict(ops.most_common()), "dialects": dict(dialects(ops).most_common()),
            "op_count": sum(ops.values()), "functions": function_count(ops),
            "dispatches": dispatch_count(ops), "appeared": [], "disappeared": [],
            "graph": e.graph.name if getattr(e, "graph", None) is not None else None,
            "graph_ids": list(getattr(e, "graph_ids", None) or []),
        }
        if e.kind == "executables":
            row["files"] = e.files
            row["dispatches"] = len({f["dispatch"] for f in e.files if f["dispatch"] != "linked"})
        if ops and e.kind != "fx-graph":  # FX names ATen ops differently: no diff
            if previous is not None:
                row["appeared"] = sorted(set(ops) - set(previous))
                row["disappeared"] = sorted(set(previous) - set(ops))
            previous = ops
        stages.append(row)
    binaries = [f for e in entries if e.kind == "executables" for f in e.files if f["kind"] == "binary"]
    vmfb = [e for e in entries if e.kind == "vmfb"]
    return {
        "title": title, "target": target, "ok": error is None, "error": error,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "total_seconds": sum(s["seconds"] or 0 for s in stages if s["kind"] in ("stage", "phase")),
        "dispatches": max([s["dispatches"] for s in stages] or [0]),
        "executable_bytes": sum(f["size"] for f in binaries),
        "vmfb_bytes": vmfb[-1].size if vmfb else None,
        "stages": stages,
    }


def write_report(directory: str | Path, entries: list, *, title: str, target: str | None = None,
                 error: str | None = None) -> Path:
    """Write ``index.json`` and ``index.html`` into ``directory``; return the HTML's path."""
    directory = Path(directory)
    index = build_index(entries, title=title, target=target, error=error)
    (directory / "index.json").write_text(json.dumps(index, indent=1))
    page = directory / "index.html"
    page.write_text(render_html(index, viewer=f"http://{VIEW_HOST}:{VIEW_PORT}", folder=directory))
    return page


# -- HTML ------------------------------------------------------------------------------------
def _hue(name: str) -> int:
    return zlib.crc32(name.encode()) % 360


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f} ms"


def _bars(counts: dict, scale: int, css: str) -> str:
    rows = []
    for name, n in counts.items():
        width = max(100.0 * n / scale, 0.5) if scale else 0
        color = f"hsl({_hue(name.split('.', 1)[0])} 60% 55%)"
        rows.append(f'<div class="bar {css}"><span class="label">{_esc(name)}</span>'
                    f'<span class="track"><span class="fill" style="width:{width:.1f}%;'
                    f'background:{color}"></span></span><span class="n">{n}</span></div>')
    return "\n".join(rows)


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#f6f7fa}
h1{font-size:22px;margin:0 0 4px} .sub{color:#5b6475;margin-bottom:16px}
.error{background:#fde8e8;border:1px solid #e0a0a0;padding:10px;white-space:pre-wrap;font-family:monospace}
.summary{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.tile{background:#fff;border:1px solid #dde1ea;border-radius:6px;padding:8px 14px}
.tile b{display:block;font-size:18px}
.stage{background:#fff;border:1px solid #dde1ea;border-radius:6px;padding:10px 14px;margin:10px 0}
.stage h2{font-size:16px;margin:0 0 6px} .stage h2 a{color:#1b4fb8;text-decoration:none}
.meta{color:#5b6475;font-size:13px;margin-bottom:6px} .meta span{margin-right:14px}
.bar{display:flex;align-items:center;gap:8px;font-size:12px;margin:2px 0}
.bar .label{width:260px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:monospace}
.bar .track{flex:1;background:#eef0f5;height:14px;border-radius:3px;max-width:640px}
.bar .fill{display:block;height:14px;border-radius:3px} .bar .n{width:70px}
.chip{display:inline-block;border-radius:10px;padding:0 8px;margin:2px;font:12px monospace}
.add{background:#dff3e4;color:#1d6b34} .del{background:#fde3e3;color:#9b2323}
table{border-collapse:collapse;font-size:12px} td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eceef3}
details summary{cursor:pointer;color:#1b4fb8;font-size:13px}
.links{font-size:13px;font-weight:normal;margin-left:14px} .links a{color:#1b4fb8}
"""


def _graph_links(s: dict, before: dict | None, viewer: str, folder: Path) -> str:
    pane = (folder / s["graph"], s.get("graph_ids", []))
    links = [f"<a class='graph' href='{_esc(graph_url(viewer, pane))}'>graph</a>"]
    if before is not None:
        both = graph_url(viewer, (folder / before["graph"], before.get("graph_ids", [])), pane)
        links.append(f"<a class='compare' href='{_esc(both)}'>compare with "
                     f"{before['number']:02d} {_esc(before['name'])}</a>")
    return "<span class='links'>" + " · ".join(links) + "</span>"


def render_html(index: dict, *, viewer: str | None = None, folder: str | Path | None = None) -> str:
    """The page; with ``viewer`` (a Model Explorer address) and the dump's ``folder``, each
    stage with a graph links to it and to a comparison with the stage before."""
    stages = index["stages"]
    timed = {f'{s["number"]:02d} {s["name"]}': s["seconds"] * 1e3 for s in stages
             if s["seconds"] is not None and s["kind"] in ("stage", "phase", "fx-graph")}
    top = max([n for s in stages for n in s["dialects"].values()] or [1])
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{_esc(index['title'])} · lowerkit dump</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(index['title'])}</h1>",
        f"<div class='sub'>lowerkit dump · target {_esc(index['target'] or '-')} · {_esc(index['created'])}</div>",
    ]
    if index["error"]:
        parts.append(f"<div class='error' id='error'>{_esc(index['error'])}</div>")
    if viewer is not None and any(s.get("graph") for s in stages):
        parts.append(f"<div class='sub'>graph links open in Model Explorer at {_esc(viewer)}: "
                     f"run <code>lowerkit view {_esc(folder)}</code></div>")
    parts.append("<div class='summary'>")
    for label, value in (("status", "ok" if index["ok"] else "failed"), ("stages", len(stages)),
                         ("total time", _ms(index["total_seconds"])),
                         ("dispatches", index["dispatches"]),
                         ("executable binaries", _size(index["executable_bytes"])),
                         ("vmfb", _size(index["vmfb_bytes"]))):
        parts.append(f"<div class='tile'>{_esc(label)}<b>{_esc(value)}</b></div>")
    parts.append("</div>")
    if timed:
        parts.append("<div class='stage' id='times'><h2>Time per stage and IREE phase (ms)</h2>")
        tmax = max(timed.values()) or 1
        parts.append(_bars({k: round(v, 1) for k, v in timed.items()}, tmax, "time"))
        parts.append("</div>")
    before = None
    for s in stages:
        href = _esc(s["file"])
        links = ""
        if viewer is not None and folder is not None and s.get("graph"):
            links = _graph_links(s, before, viewer, Path(folder))
            if s["kind"] != "error":
                before = s
        parts.append(f"<div class='stage' id='stage-{s['number']:02d}'>"
                     f"<h2>{s['number']:02d} <a href='{href}'>{_esc(s['name'])}</a>{links}</h2>")
        meta = [("kind", s["kind"]), ("build", s["build"] or "-"), ("time", _ms(s["seconds"])),
                ("size", _size(s["size"])), ("ops", s["op_count"]), ("functions", s["functions"]),
                ("dispatches", s["dispatches"])]
        parts.append("<div class='meta'>" + "".join(
            f"<span>{_esc(k)}: <b>{_esc(v)}</b></span>" for k, v in meta) + "</div>")
        if s["dialects"]:
            parts.append(_bars(s["dialects"], top, "dialect"))
            parts.append(f"<details><summary>{len(s['ops'])} op kinds</summary>"
                         + _bars(s["ops"], max(s["ops"].values()), "op") + "</details>")
        if s["appeared"] or s["disappeared"]:
            parts.append("<div class='diff'>" + "".join(
                f"<span class='chip add'>+ {_esc(o)}</span>" for o in s["appeared"]) + "".join(
                f"<span class='chip del'>− {_esc(o)}</span>" for o in s["disappeared"]) + "</div>")
        if s.get("files"):
            parts.append("<table><tr><th>dispatch</th><th>kind</th><th>file</th><th>size</th></tr>")
            for f in s["files"]:
                link = f"{href}{_esc(f['name'])}"
                parts.append(f"<tr><td>{_esc(f['dispatch'])}</td><td>{_esc(f['kind'])}</td>"
                             f"<td><a href='{link}'>{_esc(f['name'])}</a></td>"
                             f"<td>{_size(f['size'])}</td></tr>")
            parts.append("</table>")
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
