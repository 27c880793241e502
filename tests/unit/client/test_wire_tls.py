"""A plain-http host is reached without loading the certificate store; an https one is
verified as HTTPX verifies by default."""

from __future__ import annotations

import ssl

from wopeval.client._wire import WireClient, _tls_for


def test_a_plain_http_client_trusts_no_certificate_and_an_https_one_verifies() -> None:
    bare = _tls_for("http://127.0.0.1:8000")
    assert isinstance(bare, ssl.SSLContext)
    # Never used (only paths under an http base URL, no redirects followed), and closed if
    # it were: it requires a certificate and trusts none.
    assert bare.verify_mode is ssl.CERT_REQUIRED
    assert bare.check_hostname
    assert bare.cert_store_stats()["x509_ca"] == 0
    assert _tls_for("HTTP://host") is not True
    assert _tls_for("https://host.example") is True
    with WireClient("http://127.0.0.1:1", "k") as plain:
        assert not plain._http.follow_redirects
