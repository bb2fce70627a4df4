"""``rlstream promote`` and ``rlstream lineage``: the model registry from the command line.

Both open the same store as ``rlstream db`` (``--dsn``, else ``RLSTREAM_POSTGRES_DSN``,
else the embedded PostgreSQL under ``--data-dir``/``RLSTREAM_DATA_DIR``), so a model the
demo registered is found without any configuration.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.tree import Tree

from rlstream.errors import ConfigError
from rlstream.lineage import TreeNode, build_tree
from rlstream.registry import (
    DeployError,
    DeploySettings,
    EventSink,
    KafkaSink,
    NullSink,
    Registry,
    make_target,
)
from rlstream.services.cli.common import console, friendly_errors, out
from rlstream.services.cli.db import DataDirOpt, DsnOpt, _dsn
from rlstream.settings import load_settings
from rlstream.storage import PromotionRecord, Store, upgrade

PROMOTE_HELP = """Make a model the champion of its agent, or roll back to the previous champion.

A promotion is one Postgres transaction (alias + promotion row + lineage), then the deploy target's change and a DeploymentEvent on rlstream.deployments.v1 (published when RLSTREAM_KAFKA_BOOTSTRAP is set; its event id is the promotion id).

By default the promotion is gated: the model's latest evaluation must have decided promote, and the champion must still be the one that evaluation compared it with (else nothing moves: re-evaluate). --override promotes without either check; the promotion row records it (reason 'override: <--reason>').

[bold]Examples[/]

rlstream promote 3f2a9c1b7d0e   (a model id or a unique prefix of 8+ characters)

rlstream promote challenger --agent support --target kubernetes

rlstream promote 3f2a9c1b7d0e --override --reason "hotfix, evaluated offline"

rlstream promote --rollback --agent support

--target kubernetes patches RLSTREAM_DEPLOY_DEPLOYMENT (namespace RLSTREAM_DEPLOY_NAMESPACE) with the model id; see docs/registry.md.
"""

LINEAGE_HELP = """Show where a model came from: evaluation -> training run -> dataset (sha256) -> groups -> rollouts -> conversations with their source (file:line or topic/partition/offset), and the conversations the model itself served (rlstream serve logs its id on each; a conversation a registered model served leads on to that model).

[bold]Examples[/]

rlstream lineage 3f2a9c1b7d0e

rlstream lineage champion --agent support --max-children 3

rlstream lineage 3f2a9c1b7d0e --json | jq '.conversations | length'

rlstream lineage 3f2a9c1b7d0e --json | jq '.served | length'
"""


async def _open(dsn: str) -> Store:
    await upgrade(dsn)
    return await Store.connect(dsn, max_size=2)


def _sink_for(stack: AsyncExitStack) -> Any:
    bootstrap = os.environ.get("RLSTREAM_KAFKA_BOOTSTRAP")
    if not bootstrap:
        return None
    prefix = os.environ.get("RLSTREAM_TOPIC_PREFIX", "")
    return stack.enter_async_context(KafkaSink(load_settings(), topic_prefix=prefix))


async def _promote(
    dsn: str,
    model: str | None,
    agent: str | None,
    rollback: bool,
    target: str | None,
    override: str | None = None,
) -> tuple[PromotionRecord, str, bool]:
    """``override``: None for a gated promotion, else the operator's reason."""
    settings = DeploySettings()
    deploy = make_target(settings, target)  # type: ignore[arg-type]
    async with AsyncExitStack() as stack:
        store = await _open(dsn)
        stack.push_async_callback(store.close)
        pending = _sink_for(stack)
        sink: EventSink = await pending if pending is not None else NullSink()
        registry = Registry(store, target=deploy, sink=sink)
        try:
            await registry.announce_pending()
        except DeployError as exc:
            if not rollback:
                raise
            # a promotion whose deploy keeps failing (a corrupt adapter) must not block
            # the rollback that undoes it; it is superseded and never deployed
            console.print(f"[yellow]a pending promotion did not deploy: {exc}; rolling back[/]")
        if rollback:
            if agent is None:
                raise ConfigError("--rollback needs --agent")
            record = await registry.rollback(agent)
        else:
            assert model is not None
            record = await registry.promote(
                model, agent=agent, override=override is not None, reason=override or "manual"
            )
        return record, deploy.ref() or "", pending is not None


@friendly_errors
def promote(
    model: Annotated[
        str | None, typer.Argument(help="model id, unique prefix, or 'challenger' with --agent")
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="whose aliases")] = None,
    rollback: Annotated[
        bool, typer.Option("--rollback", help="restore the previous champion of --agent")
    ] = False,
    target: Annotated[
        str | None,
        typer.Option(
            "--target", help="none | kubernetes | serve | vllm (default: RLSTREAM_DEPLOY_TARGET)"
        ),
    ] = None,
    override: Annotated[
        bool,
        typer.Option("--override", help="promote without the gate's decision (recorded)"),
    ] = False,
    reason: Annotated[
        str, typer.Option("--reason", help="why, recorded with --override")
    ] = "manual",
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    if target not in (None, "none", "kubernetes"):
        raise ConfigError(f"--target must be none or kubernetes, not {target!r}")
    if rollback == (model is not None):
        raise ConfigError("pass a MODEL to promote, or --rollback --agent A (not both)")
    from rlstream.settings import load_settings

    record, ref, published = asyncio.run(
        _promote(
            _dsn(dsn, data_dir, load_settings()),
            model,
            agent,
            rollback,
            target,
            reason if override else None,
        )
    )
    verb = "rolled back" if record.kind == "rollback" else "promoted"
    verb += " (override)" if (record.reason or "").startswith("override:") else ""
    was = record.previous_model_id[:12] if record.previous_model_id else "none"
    where = f"{record.target} {ref}".strip()
    out.print(
        f"{verb}: champion of [bold]{record.agent}[/] is {record.model_id[:12]} (was {was});"
        f" deployed to {where}; event {record.promotion_id}"
        + (" published" if published else " recorded (no RLSTREAM_KAFKA_BOOTSTRAP: not published)")
    )


promote.__doc__ = PROMOTE_HELP


def _details(node: TreeNode) -> str:
    d = node.details
    if node.kind == "model":
        return f"agent={d.get('agent')} gate={d.get('gate', '?')}"
    if node.kind == "evaluation":
        ci = d.get("delta_ci_low")
        low = f" ci_low={ci:.3f}" if isinstance(ci, float) else ""
        return f"{d.get('decision')} vs {str(d.get('baseline'))[:24]}{low}"
    if node.kind == "run":
        return f"{d.get('backend')}/{d.get('method')} {d.get('status')}"
    if node.kind == "dataset":
        return f"({d.get('rollouts')} rollouts, {d.get('path')})"
    if node.kind == "rollout":
        return f"score={d.get('score')} passed={d.get('passed')}"
    if node.kind == "conversation":
        return f"← {d.get('source', '?')}"
    return ""


def _erased(node: TreeNode) -> str:
    """' [affected by erasure E (revision 2)]' for what was built from erased data."""
    ids = node.details.get("erasures")
    if not isinstance(ids, list) or not ids:
        return ""
    effects = node.details.get("erasure_effects")
    last = effects[-1] if isinstance(effects, list) and effects else {}
    what = ""
    if isinstance(last, dict):
        if last.get("outcome") in ("rewritten", "revoked"):
            what = f" ({last['outcome']}, revision {last.get('revision')})"
        elif last.get("champion"):
            what = f" (champion {last['champion']})"
    return f" [yellow]affected by erasure {', '.join(str(i) for i in ids)}{what}[/]"


def _label(node: TreeNode) -> str:
    ident = node.id if node.kind in ("group", "conversation") else node.id[:16]
    if node.kind == "dataset":
        ident = f"sha256 {node.id}"
    return f"[bold]{node.kind}[/] {ident} [dim]{_details(node)}[/]{_erased(node)}"


def _render(node: TreeNode, tree: Tree, limit: int) -> None:
    for i, child in enumerate(node.children):
        if i == limit:
            tree.add(f"[dim]… {len(node.children) - limit} more {child.kind}s (--json for all)[/]")
            break
        _render(child, tree.add(_label(child)), limit)


async def _lineage(dsn: str, model: str, agent: str | None) -> Any:
    store = await _open(dsn)
    try:
        found = await Registry(store).resolve(model, agent=agent)
        return await build_tree(store, "model", found.model_id)
    finally:
        await store.close()


@friendly_errors
def lineage(
    model: Annotated[str, typer.Argument(help="model id, unique prefix, or alias with --agent")],
    agent: Annotated[str | None, typer.Option("--agent", help="for champion/challenger")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the whole tree as JSON")] = False,
    max_children: Annotated[
        int, typer.Option("--max-children", min=1, help="children shown per node")
    ] = 5,
    dsn: str | None = DsnOpt,
    data_dir: Path | None = DataDirOpt,
) -> None:
    from rlstream.settings import load_settings

    tree = asyncio.run(_lineage(_dsn(dsn, data_dir, load_settings()), model, agent))
    if as_json:
        out.print_json(orjson.dumps(tree.model_dump(mode="json")).decode())
        return
    view = Tree(_label(tree.root))
    _render(tree.root, view, max_children)
    out.print(view)
    counts = ", ".join(f"{n} {k}s" for k, n in sorted(tree.counts.items()) if k != "model")
    out.print(f"[dim]{counts}[/]")
    if tree.served:
        shown = ", ".join(
            f"{c['conversation_id']} ← {c['source']}" for c in tree.served[:max_children]
        )
        more = (
            f" … {len(tree.served) - max_children} more (--json)"
            if (len(tree.served) > max_children)
            else ""
        )
        out.print(f"served by this model: {len(tree.served)} conversations: {shown}{more}")


lineage.__doc__ = LINEAGE_HELP
