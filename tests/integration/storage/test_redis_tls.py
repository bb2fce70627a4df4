"""Redis over TLS with an ACL user (Debian's redis-server 7, TLS only, default user off):
the idempotency keys work over rediss://, and a wrong password, an untrusted CA or no
credentials at all are each one ConfigError line naming the setting."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from rlstream.delivery.idempotency import SeenKeys
from rlstream.errors import ConfigError
from rlstream.storage import RedisState

pytestmark = pytest.mark.redis


def _state(url: str, cafile: Path) -> RedisState:
    return RedisState.from_url(url, namespace=f"t{uuid.uuid4().hex[:8]}", ttl_s=60, cafile=cafile)


async def test_idempotency_keys_over_tls_with_an_acl_user(redis_tls: Any) -> None:
    state = _state(redis_tls.url, redis_tls.cafile)
    try:
        assert await state.check()
        who = await state.redis.execute_command("ACL", "WHOAMI")
        assert who in (b"rlstream", "rlstream")
        keys = SeenKeys(state, "transcript")
        assert await keys.seen(["a", "b"]) == [False, False]
        await keys.mark(["a"])
        assert await keys.seen(["a", "b"]) == [True, False]
        assert await state.seen(state.idem_key("rollout", "r1")) is False
        assert await state.seen(state.idem_key("rollout", "r1")) is True
    finally:
        await state.close()


@pytest.mark.parametrize("password", ["wrong-password", ""])
async def test_refused_credentials_are_one_config_error_line(redis_tls: Any, password: str) -> None:
    # "": no credentials at all (the default user is off, so that is refused too)
    url = redis_tls.url_for(password) if password else f"rediss://127.0.0.1:{redis_tls.port}/0"
    state = _state(url, redis_tls.cafile)
    try:
        with pytest.raises(ConfigError) as err:
            await state.check()
    finally:
        await state.close()
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("redis refused the user/password in RLSTREAM_REDIS_URL")
    assert redis_tls.password not in msg and "wrong-password" not in msg


async def test_an_untrusted_certificate_is_one_config_error_line(
    redis_tls: Any, tmp_path: Path
) -> None:
    from rlstream_testkit.tls import TestCA

    other = TestCA(tmp_path / "other-ca", name="some other CA").cafile
    state = _state(redis_tls.url, other)
    try:
        with pytest.raises(ConfigError) as err:
            await state.check()
    finally:
        await state.close()
    msg = str(err.value)
    assert "\n" not in msg
    assert "certificate is not trusted" in msg and "RLSTREAM_REDIS_SSL_CAFILE" in msg


def test_a_ca_for_a_plaintext_url_is_refused(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    with pytest.raises(ConfigError, match="RLSTREAM_REDIS_SSL_CAFILE is set but"):
        RedisState.from_url("redis://127.0.0.1:1/0", cafile=ca)
