"""A KRaft broker with secured listeners besides PLAINTEXT: SASL_SSL (SCRAM-SHA-512) and
SSL with client certificates required (mTLS). CONTROLLER and inter-broker stay PLAINTEXT.

Certificates are made at start (:mod:`.tls`); the SCRAM user is added at format time
(``kafka-storage format --add-scram``), so no admin call is needed before clients connect.
The broker's key and certificate chain are PEM stores (``ssl.keystore.type=PEM``).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from .kafka import KafkaServer
from .procs import free_port
from .tls import CertFiles, TestCA

SCRAM_USER = "rlstream"


class SecureKafkaServer(KafkaServer):
    """``.bootstrap`` (PLAINTEXT), ``.sasl_ssl_bootstrap``, ``.ssl_bootstrap``, the CA file,
    a client cert/key, the SCRAM user and password, and :meth:`env` for each listener."""

    def __init__(self, workdir: Path, host: str = "127.0.0.1") -> None:
        super().__init__(workdir, host)
        self.sasl_ssl_port = free_port(host)
        self.ssl_port = free_port(host)
        self.sasl_ssl_bootstrap = f"{host}:{self.sasl_ssl_port}"
        self.ssl_bootstrap = f"{host}:{self.ssl_port}"
        self.scram_user = SCRAM_USER
        self.scram_password = secrets.token_urlsafe(18)
        certs = workdir / "certs"
        self.ca = TestCA(certs)
        self.cafile = self.ca.cafile
        self.server_cert: CertFiles = self.ca.issue(
            "broker", server=True, hosts=(host, "localhost")
        )
        self.client_cert: CertFiles = self.ca.issue("rlstream-client", server=False)
        self._keystore = certs / "broker-keystore.pem"
        # PEM keystore: the PKCS#8 key followed by the certificate chain, in one file
        self._keystore.write_bytes(
            self.server_cert.key.read_bytes() + self.server_cert.cert.read_bytes()
        )
        self._keystore.chmod(0o600)

    def _extra_listeners(self) -> dict[str, int]:
        return {"SASL_SSL": self.sasl_ssl_port, "SSL": self.ssl_port}

    def _extra_props(self) -> dict[str, str]:
        jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self._keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.cafile),
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": jaas,
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.ssl.ssl.client.auth": "required",
        }

    def _format_args(self) -> list[str]:
        cred = f"SCRAM-SHA-512=[name={self.scram_user},password={self.scram_password}]"
        return ["--add-scram", cred]

    def env(self, listener: str, **overrides: str) -> dict[str, str]:
        """``RLSTREAM_KAFKA_*`` variables that connect a client through ``listener``
        (``plaintext``, ``sasl_ssl`` or ``mtls``)."""
        if listener == "plaintext":
            out = {"RLSTREAM_KAFKA_BOOTSTRAP": self.bootstrap}
        elif listener == "sasl_ssl":
            out = {
                "RLSTREAM_KAFKA_BOOTSTRAP": self.sasl_ssl_bootstrap,
                "RLSTREAM_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "RLSTREAM_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
                "RLSTREAM_KAFKA_SASL_USERNAME": self.scram_user,
                "RLSTREAM_KAFKA_SASL_PASSWORD": self.scram_password,
                "RLSTREAM_KAFKA_SSL_CAFILE": str(self.cafile),
            }
        elif listener == "mtls":
            out = {
                "RLSTREAM_KAFKA_BOOTSTRAP": self.ssl_bootstrap,
                "RLSTREAM_KAFKA_SECURITY_PROTOCOL": "SSL",
                "RLSTREAM_KAFKA_SSL_CAFILE": str(self.cafile),
                "RLSTREAM_KAFKA_SSL_CERTFILE": str(self.client_cert.cert),
                "RLSTREAM_KAFKA_SSL_KEYFILE": str(self.client_cert.key),
            }
        else:
            raise ValueError(f"unknown listener {listener!r}")
        out.update(overrides)
        return out


__all__ = ["SCRAM_USER", "SecureKafkaServer"]
