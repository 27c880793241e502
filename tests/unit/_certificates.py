"""A certificate authority made for one test: the certificates of the loopback TLS servers of
the model proxy's upstream tests, and a client's TLS that trusts only that authority."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class CertificateAuthority:
    """Signs servers' certificates with a key made here; each server's certificate and key
    are written to `directory` (a server's TLS loads them from files)."""

    def __init__(self, directory: Path, name: str = "wopeval test CA") -> None:
        self._directory = directory
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._certificate = _signed(
            self._name,
            self._key.public_key(),
            self._name,
            self._key,
            x509.BasicConstraints(ca=True, path_length=0),
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()),
        )

    def client_tls(self) -> ssl.SSLContext:
        """A client's TLS, verifying as the system's default does, that trusts only this
        authority."""
        pem = self._certificate.public_bytes(serialization.Encoding.PEM).decode()
        return ssl.create_default_context(cadata=pem)

    def server_tls(self, *names: str) -> ssl.SSLContext:
        """A server's TLS whose certificate this authority signed for `names` (IP addresses
        or DNS names)."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
        certificate = _signed(
            subject,
            key.public_key(),
            self._name,
            self._key,
            x509.BasicConstraints(ca=False, path_length=None),
            x509.SubjectAlternativeName([_general_name(name) for name in names]),
            x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
        )
        # Named by serial number (random): several authorities may share a test's directory.
        cert_file = self._directory / f"{certificate.serial_number}.pem"
        key_file = self._directory / f"{certificate.serial_number}.key"
        cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server.load_cert_chain(cert_file, key_file)
        return server


def _signed(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *extensions: x509.ExtensionType,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    for extension in extensions:
        # Critical as RFC 5280 has them (§4.2.1.9, §4.2.1.3), and as the strict verification of
        # newer Pythons' default contexts (3.13's VERIFY_X509_STRICT) checks, with the key ids.
        critical = isinstance(extension, x509.BasicConstraints | x509.KeyUsage)
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)
