"""Kafka security settings: validation naming the variable, and the client kwargs built from
them (aiokafka's and FastStream's forms agree), and the one-line diagnosis of failures."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Any

import pytest
from aiokafka import errors as kerr
from aiokafka.abc import AbstractTokenProvider
from faststream.kafka.security import parse_security
from pydantic import SecretStr

from rlstream.delivery.kafka_connect import OneLine, explain
from rlstream.delivery.kafka_security import (
    check,
    client_kwargs,
    faststream_security,
    sasl_password,
    token_provider,
)
from rlstream.errors import ConfigError
from rlstream.settings import Settings
from rlstream_testkit.tls import CertFiles, TestCA

pytestmark = pytest.mark.unit


class StaticToken(AbstractTokenProvider):
    async def token(self) -> str:
        return "t0ken"


def make_provider() -> StaticToken:
    return StaticToken()


NOT_A_PROVIDER = object()


def settings(**kw: Any) -> Settings:
    return Settings(**kw)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CertFiles]:
    ca = TestCA(tmp_path_factory.mktemp("pki"))
    return ca.cafile, ca.issue("client", server=False)


def test_plaintext_is_the_default_and_adds_nothing_else() -> None:
    assert client_kwargs(settings()) == {"security_protocol": "PLAINTEXT"}
    assert faststream_security(settings()) == (None, {})


def test_sasl_ssl_scram_kwargs_match_faststreams_own_translation(pki: Any) -> None:
    cafile, _ = pki
    s = settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="app",
        kafka_sasl_password="pw",
        kafka_ssl_cafile=cafile,
    )
    kw = client_kwargs(s)
    assert isinstance(kw.pop("ssl_context"), ssl.SSLContext)
    assert kw == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "app",
        "sasl_plain_password": "pw",
    }
    security, extra = faststream_security(s)
    parsed = parse_security(security)
    assert parsed["ssl_context"].check_hostname and extra == {}
    parsed.pop("ssl_context")
    assert parsed == kw


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256"])
def test_sasl_plaintext_mechanisms(mech: str) -> None:
    s = settings(
        kafka_security_protocol="sasl_plaintext",
        kafka_sasl_mechanism=mech.lower(),
        kafka_sasl_username="u",
        kafka_sasl_password="p",
    )
    kw = client_kwargs(s)
    assert kw["security_protocol"] == "SASL_PLAINTEXT" and kw["sasl_mechanism"] == mech
    assert "ssl_context" not in kw
    parsed = parse_security(faststream_security(s)[0])
    assert parsed["security_protocol"] == "SASL_PLAINTEXT" and parsed["sasl_mechanism"] == mech


def test_mtls_loads_the_client_certificate(pki: Any) -> None:
    cafile, client = pki
    s = settings(
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=cafile,
        kafka_ssl_certfile=client.cert,
        kafka_ssl_keyfile=client.key,
        kafka_ssl_check_hostname=False,
    )
    kw = client_kwargs(s)
    assert kw["security_protocol"] == "SSL" and not kw["ssl_context"].check_hostname
    parsed = parse_security(faststream_security(s)[0])
    assert parsed["security_protocol"] == "SSL"


def test_password_from_a_mounted_file(tmp_path: Path) -> None:
    f = tmp_path / "password"
    f.write_text("from-file\n")
    s = settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="PLAIN",
        kafka_sasl_username="u",
        kafka_sasl_password_file=f,
    )
    assert sasl_password(s) == "from-file"
    assert client_kwargs(s)["sasl_plain_password"] == "from-file"
    both = settings(kafka_sasl_password=SecretStr("env"), kafka_sasl_password_file=f)
    assert sasl_password(both) == "env"  # the variable wins over the file
    gone = settings(kafka_sasl_password_file=tmp_path / "missing")
    with pytest.raises(ConfigError, match="RLSTREAM_KAFKA_SASL_PASSWORD_FILE"):
        sasl_password(gone)


def test_password_is_secret_in_the_settings_repr() -> None:
    s = settings(kafka_sasl_password="hunter2", kafka_ssl_key_password="k3y")
    assert "hunter2" not in repr(s) and "k3y" not in repr(s)


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"kafka_security_protocol": "TLS"}, "RLSTREAM_KAFKA_SECURITY_PROTOCOL"),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "GSSAPI"},
            "RLSTREAM_KAFKA_SASL_MECHANISM",
        ),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "MD5"},
            "RLSTREAM_KAFKA_SASL_MECHANISM",
        ),
        ({"kafka_security_protocol": "SASL_SSL"}, "RLSTREAM_KAFKA_SASL_USERNAME"),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_username": "u"},
            "RLSTREAM_KAFKA_SASL_PASSWORD",
        ),
        (
            {"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "OAUTHBEARER"},
            "RLSTREAM_KAFKA_OAUTH_TOKEN_PROVIDER",
        ),
        (
            {"kafka_security_protocol": "SSL", "kafka_ssl_certfile": Path(__file__)},
            "RLSTREAM_KAFKA_SSL_KEYFILE",
        ),
        (
            {"kafka_security_protocol": "SSL", "kafka_ssl_keyfile": Path(__file__)},
            "RLSTREAM_KAFKA_SSL_CERTFILE",
        ),
        ({"kafka_ssl_cafile": Path(__file__)}, "RLSTREAM_KAFKA_SSL_CAFILE"),
        (
            {"kafka_security_protocol": "SSL", "kafka_ssl_cafile": Path("/nonexistent.pem")},
            "RLSTREAM_KAFKA_SSL_CAFILE",
        ),
    ],
)
def test_inconsistent_settings_are_refused_naming_the_variable(
    kw: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        check(settings(**kw))
    with pytest.raises(ConfigError, match=named):
        client_kwargs(settings(**kw))


def test_an_unusable_key_names_the_files(tmp_path: Path, pki: Any) -> None:
    cafile, client = pki
    bad = tmp_path / "bad.key"
    bad.write_text("not a key\n")
    s = settings(
        kafka_security_protocol="SSL",
        kafka_ssl_cafile=cafile,
        kafka_ssl_certfile=client.cert,
        kafka_ssl_keyfile=bad,
    )
    with pytest.raises(ConfigError, match="RLSTREAM_KAFKA_SSL_KEYFILE"):
        client_kwargs(s)


@pytest.mark.parametrize("ref", [f"{__name__}:StaticToken", f"{__name__}:make_provider"])
def test_oauthbearer_provider_from_module_attr(ref: str) -> None:
    s = settings(
        kafka_security_protocol="SASL_PLAINTEXT",
        kafka_sasl_mechanism="OAUTHBEARER",
        kafka_oauth_token_provider=ref,
    )
    kw = client_kwargs(s)
    assert kw["sasl_mechanism"] == "OAUTHBEARER"
    assert isinstance(kw["sasl_oauth_token_provider"], StaticToken)
    security, extra = faststream_security(s)
    assert parse_security(security)["sasl_mechanism"] == "OAUTHBEARER"
    assert isinstance(extra["sasl_oauth_token_provider"], StaticToken)


@pytest.mark.parametrize(
    "ref", ["nomodule", f"{__name__}:missing", "no_such_module_x:f", f"{__name__}:NOT_A_PROVIDER"]
)
def test_a_bad_token_provider_is_a_config_error(ref: str) -> None:
    s = settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="OAUTHBEARER",
        kafka_oauth_token_provider=ref,
    )
    with pytest.raises(ConfigError, match="RLSTREAM_KAFKA_OAUTH_TOKEN_PROVIDER"):
        token_provider(s)


def _verify_error(message: str) -> ssl.SSLCertVerificationError:
    err = ssl.SSLCertVerificationError(1, "certificate verify failed")
    err.verify_message = message
    return err


@pytest.mark.parametrize(
    ("exc", "words", "named"),
    [
        (kerr.SaslAuthenticationFailed("bad"), "SASL authentication failed for user 'u'",
         "RLSTREAM_KAFKA_SASL_PASSWORD"),
        (_verify_error("self-signed certificate in certificate chain"), "is not trusted",
         "RLSTREAM_KAFKA_SSL_CAFILE"),
        (_verify_error("IP address mismatch, certificate is not valid for '10.0.0.1'"),
         "does not name that host", "RLSTREAM_KAFKA_SSL_CHECK_HOSTNAME"),
        (ConnectionRefusedError(111, "Connection refused"), "broker unreachable",
         "RLSTREAM_KAFKA_BOOTSTRAP"),
        (TimeoutError(), "no answer", "RLSTREAM_KAFKA_BOOTSTRAP"),
        (kerr.KafkaConnectionError("closed"), "closed the connection",
         "RLSTREAM_KAFKA_SECURITY_PROTOCOL"),
        (kerr.UnsupportedSaslMechanismError("x"), "does not offer SASL",
         "RLSTREAM_KAFKA_SASL_MECHANISM"),
    ],
)  # fmt: skip
def test_each_failure_is_one_line_naming_what_to_check(
    exc: BaseException, words: str, named: str
) -> None:
    s = settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512",
        kafka_sasl_username="u",
        kafka_sasl_password="p",
    )
    line = explain(exc, s, "broker:9094")
    assert line.startswith("kafka: ") and "\n" not in line
    assert words in line and named in line and "broker:9094" in line
    assert "p)" not in line.replace("SCRAM-SHA-512)", "")  # the password is never shown


def test_the_same_line_is_logged_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    one = OneLine(logging.getLogger("test.oneline"), every_s=60)
    with caplog.at_level(logging.INFO, logger="test.oneline"):
        assert one.report("kafka: a")
        assert not one.report("kafka: a")
        assert one.report("kafka: b")  # a new problem is logged at once
        one.clear()
    assert [r.getMessage() for r in caplog.records] == ["kafka: a", "kafka: b", "kafka: connected"]
