"""``lineage``, ``promote`` and ``rollback`` as MCP tools, on the same store as the CLI.

``promote`` and ``rollback`` change what serves traffic, so both refuse without
``confirm: true`` and say in that refusal what they would change: the agent, the model, the
champion it replaces (read from the store) and the deploy target.
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import FastMCP
from pydantic import Field

from rlstream.errors import ConfigError
from rlstream.services.cli.mcpserver.models import LineageNode, LineageResult, PromotionResult
from rlstream.services.cli.mcpserver.state import State

Target = Literal["none", "kubernetes", "serve", "vllm"]


class ConfirmRequired(ConfigError):
    code = "confirm_required"


def _dsn() -> str:
    """The CLI's store: RLSTREAM_POSTGRES_DSN, else the embedded PostgreSQL."""
    from rlstream.settings import load_settings
    from rlstream.storage import start_embedded_postgres
    from rlstream.storage.embedded import resolve_dsn

    settings = load_settings()
    if settings.postgres_dsn is not None or settings.require_postgres_dsn:
        return resolve_dsn(settings)
    return start_embedded_postgres(settings.data_dir)


async def _open() -> Any:
    from rlstream.storage import Store, upgrade

    dsn = _dsn()
    await upgrade(dsn)
    return await Store.connect(dsn, max_size=2)


def register(server: FastMCP[Any], state: State) -> None:
    @server.tool(structured_output=True)
    async def lineage(
        model: Annotated[str, Field(description="model id, unique prefix, or champion/challenger")],
        agent: str | None = None,
        max_nodes: Annotated[int, Field(ge=1, le=5000)] = 200,
    ) -> LineageResult:
        """Where a model came from: evaluation -> run -> dataset -> groups -> rollouts ->
        conversations with their sources (rlstream lineage)."""
        from rlstream.lineage import build_tree
        from rlstream.registry import Registry

        store = await _open()
        try:
            found = await Registry(store).resolve(model, agent=agent)
            tree = await build_tree(store, "model", found.model_id)
        finally:
            await store.close()
        nodes: list[LineageNode] = []
        stack = [tree.root]
        while stack and len(nodes) < max_nodes:
            node = stack.pop()
            nodes.append(
                LineageNode(
                    kind=node.kind,
                    id=node.id,
                    children=len(node.children),
                    details={k: str(v) for k, v in node.details.items()},
                )
            )
            stack.extend(reversed(node.children))
        return LineageResult(
            model_id=found.model_id, counts=dict(tree.counts), nodes=nodes, truncated=bool(stack)
        )

    @server.tool(structured_output=True)
    async def promote(
        model: Annotated[str, Field(description="model id, unique prefix, or 'challenger'")],
        agent: str | None = None,
        confirm: Annotated[
            bool, Field(description="must be true: this changes the champion")
        ] = False,
        target: Target | None = None,
        override: Annotated[bool, Field(description="promote without the gate (recorded)")] = False,
        reason: str = "manual",
    ) -> PromotionResult:
        """Make a model the champion of its agent (gated on its evaluation unless override).
        Refused without confirm: true; the refusal says what would change."""
        return await _change("promote", model, agent, confirm, target, override, reason)

    @server.tool(structured_output=True)
    async def rollback(
        agent: str,
        confirm: Annotated[
            bool, Field(description="must be true: this changes the champion")
        ] = False,
        target: Target | None = None,
    ) -> PromotionResult:
        """Restore the previous champion of an agent. Refused without confirm: true; the
        refusal says what would change."""
        return await _change("rollback", None, agent, confirm, target, False, "rollback")


async def _preview(registry: Any, action: str, model: str | None, agent: str | None) -> str:
    """What the change would do, read from the store; nothing is written."""
    if action == "rollback":
        assert agent is not None
        current = await registry.store.get_alias(agent, "champion")
        history = [p for p in await registry.store.list_promotions(agent) if p.alias == "champion"]
        mine = [p for p in history if p.kind == "promote" and p.model_id == current]
        previous = mine[-1].previous_model_id if mine else None
        now = current[:12] if current else "none"
        back = previous[:12] if previous else "nothing (no earlier champion)"
        return f"rollback would make the champion of {agent!r} {back} (now {now})"
    assert model is not None
    found = await registry.resolve(model, agent=agent)
    current = await registry.store.get_alias(found.agent, "champion")
    now = current[:12] if current else "none"
    return f"promote would make {found.model_id[:12]} the champion of {found.agent!r} (now {now})"


async def _describe(deploy: Any, action: str, model: str | None, agent: str | None) -> str:
    """The preview from the store, or from the arguments alone when the store cannot say
    (no such model, no store): the refusal must come either way."""
    from rlstream.registry import Registry

    try:
        store = await _open()
    except Exception as exc:
        return _plain(action, model, agent, f"registry not readable: {exc}")
    try:
        return await _preview(Registry(store, target=deploy), action, model, agent)
    except Exception as exc:
        return _plain(action, model, agent, str(exc))
    finally:
        await store.close()


def _plain(action: str, model: str | None, agent: str | None, why: str) -> str:
    whose = repr(agent) if agent else "its agent"
    if action == "rollback":
        return f"rollback would restore the previous champion of {whose} ({why})"
    return f"promote would make {model} the champion of {whose} ({why})"


async def _change(
    action: str,
    model: str | None,
    agent: str | None,
    confirm: bool,
    target: str | None,
    override: bool,
    reason: str,
) -> PromotionResult:
    from rlstream.registry import DeploySettings, KafkaSink, NullSink, Registry, make_target
    from rlstream.settings import load_settings

    deploy = make_target(DeploySettings(), target)  # type: ignore[arg-type]
    if not confirm:
        what = await _describe(deploy, action, model, agent)
        raise ConfirmRequired(
            f"{what}, deployed to target {deploy.name}; nothing changed: "
            "call again with confirm: true"
        )
    async with AsyncExitStack() as stack:
        store = await _open()
        stack.push_async_callback(store.close)
        published = bool(os.environ.get("RLSTREAM_KAFKA_BOOTSTRAP"))
        sink: Any = NullSink()
        if published:
            prefix = os.environ.get("RLSTREAM_TOPIC_PREFIX", "")
            sink = await stack.enter_async_context(KafkaSink(load_settings(), topic_prefix=prefix))
        registry = Registry(store, target=deploy, sink=sink)
        await registry.announce_pending()
        if action == "rollback":
            assert agent is not None
            record = await registry.rollback(agent)
        else:
            assert model is not None
            record = await registry.promote(model, agent=agent, override=override, reason=reason)
    return PromotionResult(
        action="rollback" if record.kind == "rollback" else "promote", agent=record.agent,
        model_id=record.model_id, previous_model_id=record.previous_model_id,
        target=f"{record.target} {deploy.ref() or ''}".strip(),
        promotion_id=record.promotion_id, reason=record.reason, published=published,
    )  # fmt: skip
