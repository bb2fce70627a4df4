"""What to serve: (base model dir, adapter dir, model id) from a folder or the registry.

The model id tags every logged conversation, so lineage can link it to the model: a
registry model's id, else ``--model-id``, else the adapter (or model) folder's name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from rlstream.errors import ConfigError


def local(path: Path) -> tuple[Path | None, Path | None] | None:
    """(base, adapter) for a folder, or None when it is not a folder."""
    if not path.is_dir():
        return None
    if (path / "adapter" / "adapter_config.json").is_file():
        return None, path / "adapter"
    if (path / "adapter_config.json").is_file():
        return None, path
    if (path / "config.json").is_file():
        return path, None
    raise ConfigError(f"{path} holds no adapter (adapter_config.json) and no model (config.json)")


async def _registry(dsn: str, ref: str, agent: str | None) -> tuple[Path | None, Path | None, str]:
    from rlstream.registry import Registry
    from rlstream.storage import Store, upgrade

    await upgrade(dsn)
    store = await Store.connect(dsn, max_size=2)
    try:
        model = await Registry(store).resolve(ref, agent=agent)
    finally:
        await store.close()
    if not model.path:
        raise ConfigError(f"model {model.model_id[:12]} has no stored path")
    found = local(Path(model.path))
    if found is None:
        raise ConfigError(f"model {model.model_id[:12]}: {model.path} is gone")
    base = model.metadata.get("base_model")
    base_dir = Path(base) if isinstance(base, str) and Path(base).is_dir() else found[0]
    return base_dir, found[1], model.model_id


def resolve(
    ref: str | None, agent: str | None, dsn: str | None, model_id: str | None
) -> tuple[Path, Path | None, str]:
    """(base, adapter, model id); ``ref`` None serves the default base model alone."""
    if ref is None:
        base, adapter, mid = None, None, model_id
    elif (found := local(Path(ref))) is not None:
        base, adapter = found
        mid = model_id or (adapter or base or Path(ref)).resolve().name
        if adapter is not None and adapter.name == "adapter":
            mid = model_id or adapter.resolve().parent.name
    else:
        if dsn is None:
            raise ConfigError(f"{ref} is not a folder; a registry id needs the database")
        base, adapter, mid = asyncio.run(_registry(dsn, ref, agent))
        mid = model_id or mid
    if base is None:
        from rlstream.training.basemodel import ensure_base_model

        base = ensure_base_model()
    return base, adapter, mid or Path(base).name
