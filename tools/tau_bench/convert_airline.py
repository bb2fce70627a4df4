"""Build rlstream's tau-bench airline data file from a tau-bench checkout.

    python tools/tau_bench/convert_airline.py PATH/TO/tau-bench \
        shared/rlstream/environments/tau_airline/data/airline.json.gz

Reads the airline domain's database (``data/{users,reservations,flights}.json``), its policy
(``wiki.md``) and its test tasks (``tasks_test.py``: each task's user id, instruction,
ground-truth actions and expected outputs) and writes them as one gzipped JSON object:
``{"source", "policy", "users", "reservations", "flights", "tasks"}``. tau-bench is MIT
licensed (Copyright (c) 2024 Sierra); the notice ships beside the data file.

The tasks file is Python; it is evaluated with stand-ins for ``Task`` and ``Action`` (no
tau-bench import), so only run this on a checkout you trust.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def _tasks(source: str) -> list[dict[str, Any]]:
    def task(**kw: Any) -> dict[str, Any]:
        return kw

    def action(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "arguments": kwargs}

    lines = [ln for ln in source.splitlines() if not ln.startswith(("from ", "import "))]
    scope: dict[str, Any] = {"Task": task, "Action": action}
    exec("\n".join(lines), scope)
    out = []
    for i, t in enumerate(scope["TASKS"]):
        out.append(
            {
                "task_id": i,
                "user_id": t["user_id"],
                "instruction": t["instruction"],
                "actions": t["actions"],
                "outputs": list(t.get("outputs") or []),
            }
        )
    return out


def main(checkout: Path, out: Path) -> None:
    root = checkout / "tau_bench" / "envs" / "airline"
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    data: dict[str, Any] = {
        "source": f"sierra-research/tau-bench {commit or '(unknown commit)'}, MIT License",
        "policy": (root / "wiki.md").read_text(),
    }
    for name in ("users", "reservations", "flights"):
        data[name] = json.loads((root / "data" / f"{name}.json").read_text())
    data["tasks"] = _tasks((root / "tasks_test.py").read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(blob, compresslevel=9, mtime=0))
    print(
        f"{out}: {len(data['tasks'])} tasks, {len(data['users'])} users, "
        f"{len(data['reservations'])} reservations, {len(data['flights'])} flights"
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: convert_airline.py TAU_BENCH_CHECKOUT OUT.json.gz")
    main(Path(sys.argv[1]), Path(sys.argv[2]))
