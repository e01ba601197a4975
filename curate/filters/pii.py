"""PII redaction: e-mail addresses and public IP addresses are replaced by placeholders."""

from __future__ import annotations

import ipaddress
import re

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Step
from curate.core.validate import check, config_error

EMAIL = re.compile(
    r"(?<![\w.+-])[\w.+-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
IPV4 = re.compile(r"(?<![\w.])(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?!\w|\.\d)")
# Candidates only (hex groups with at least two colons); `ipaddress` decides what is an address.
IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:]*:[0-9A-Fa-f]*:)[0-9A-Fa-f:]{3,39}(?![\w:.])")


def _is_public(candidate: str) -> bool:
    """Only globally routable addresses are personal data; private, loopback and documentation ranges
    (192.168.x.x, 127.0.0.1, 2001:db8::) are left alone, as are strings that are not addresses at all."""
    try:
        return ipaddress.ip_address(candidate).is_global
    except ValueError:
        return False


class Pii(Step):
    """Replaces e-mail addresses with `email_placeholder` and public IPv4/IPv6 addresses with
    `ip_placeholder`. Never drops a document. Counts go to `stats.extra`: `emails`, `ips` (addresses
    replaced) and `docs_redacted`. The placeholders are not themselves matched, so running twice is a no-op.
    """

    name = "pii"

    def __init__(
        self,
        emails: bool = True,
        ips: bool = True,
        email_placeholder: str = "<EMAIL>",
        ip_placeholder: str = "<IP_ADDRESS>",
    ):
        self.emails = check(self, "emails", emails, bool)
        self.ips = check(self, "ips", ips, bool)
        for name, value in (("email_placeholder", email_placeholder), ("ip_placeholder", ip_placeholder)):
            if not isinstance(value, str):  # "" is allowed: it deletes the address
                raise config_error(self, f"{name} must be a string, got {value!r}")
        self.email_placeholder = email_placeholder
        self.ip_placeholder = ip_placeholder
        self._counts = {"emails": 0, "ips": 0, "docs_redacted": 0}

    def redact(self, text: str) -> tuple[str, int, int]:
        """(text with placeholders, e-mails replaced, IP addresses replaced)."""
        n_email = n_ip = 0
        if self.emails and "@" in text:
            text, n_email = EMAIL.subn(self.email_placeholder, text)
        if self.ips:
            hits = 0

            def sub(m: re.Match) -> str:
                nonlocal hits
                if _is_public(m.group(0)):
                    hits += 1
                    return self.ip_placeholder
                return m.group(0)

            if "." in text:
                text = IPV4.sub(sub, text)
            if "::" in text or text.count(":") >= 3:
                text = IPV6.sub(sub, text)
            n_ip = hits
        return text, n_email, n_ip

    def apply(self, doc: Document) -> Document:
        text, n_email, n_ip = self.redact(doc.text)
        if n_email or n_ip:
            doc.text = text
            self._counts["emails"] += n_email
            self._counts["ips"] += n_ip
            self._counts["docs_redacted"] += 1
        return doc

    def finish(self, stats: StepStats) -> None:
        stats.extra.update(self._counts)
        self._counts = dict.fromkeys(self._counts, 0)
