"""The msk-iam extra's token provider: AWS's signer, offline (SigV4 presigning needs only
credentials, no network), cached until shortly before expiry, and wired by module:attr."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlparse

import pytest

from rlstream.delivery.kafka_msk_iam import MSKIAMTokenProvider
from rlstream.delivery.kafka_security import client_kwargs
from rlstream.errors import ConfigError
from rlstream.settings import Settings

pytestmark = pytest.mark.unit


@pytest.fixture
def fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


async def test_token_is_an_msk_presigned_url_and_is_reused(fake_aws: None) -> None:
    p = MSKIAMTokenProvider()
    tok = await p.token()
    url = base64.urlsafe_b64decode(tok + "=" * (-len(tok) % 4)).decode()
    parsed = urlparse(url)
    assert parsed.netloc == "kafka.eu-west-1.amazonaws.com"
    q = parse_qs(parsed.query)
    assert q["Action"] == ["kafka-cluster:Connect"]
    assert q["X-Amz-Credential"][0].startswith("AKIDEXAMPLE/")
    assert await p.token() == tok  # cached: one signature per expiry window


def test_wired_through_the_settings(fake_aws: None) -> None:
    s = Settings(
        kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="OAUTHBEARER",
        kafka_oauth_token_provider="rlstream.delivery.kafka_msk_iam:MSKIAMTokenProvider",
    )
    kw = client_kwargs(s)
    assert isinstance(kw["sasl_oauth_token_provider"], MSKIAMTokenProvider)
    assert kw["security_protocol"] == "SASL_SSL" and kw["sasl_mechanism"] == "OAUTHBEARER"


def test_without_a_region_it_says_so(fake_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigError, match="AWS_REGION"):
        MSKIAMTokenProvider()
