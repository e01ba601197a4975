"""PII redaction: e-mail addresses and public IP addresses are replaced by placeholders.

E-mail addresses are replaced whole. The local part is RFC 5322's atext (letters, digits and
``!#$%&'*+/=?^`{|}~-``, dots inside), starting and ending with a letter, digit or `_` (so `o'brien@`,
`bounce+user=example.org@`, `_______@` are whole addresses and the quotes around `'bob@example.com'` stay); letters
and digits of any script count (RFC 6531: `müller@`, `用户@`). The domain is dot-separated labels of letters (any
script), digits and inner hyphens ending in a TLD of 2-24 letters (`example.ie`, `пример.рф`, `例子.广告`, `xn--p1ai`),
or an IP address, bare or bracketed (`root@81.2.69.160`, `admin@[81.2.69.160]`). Limit: in a language written
without spaces, characters joined to an address are taken as part of its local part.

A public IPv4 address is replaced unless it reads as a version or a section number (`version_like`): a dotted
quad preceded, in the 24 characters before it on its line, by a version or numbering word (version, ver,
AssemblyVersion, FileVersion, release, build, firmware, section, chapter, article, clause, figure, table, rule,
§, v), or written with a `v`/`V` or followed by a pre-release tag (`-beta`, `-rc1`, `+build`), or whose four
parts are all single digits (1.0.0.0, 2.1.3.4: the ones version numbers take, where the addresses are a few
thousand of infrastructure blocks, no one's personal address).
"""

from __future__ import annotations

import ipaddress
import re

from curate.core.document import Document
from curate.core.stats import StepStats
from curate.core.step import Step
from curate.core.validate import check, config_error

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_QUAD = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
_ATEXT = r"[\w!#$%&'*+/=?^`{|}~-]"  # \w: letters and digits of every script, and `_`
_LOCAL = rf"\w(?:(?:{_ATEXT}|\.)*\w)?"
_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"
EMAIL = re.compile(
    rf"(?<!\w){_LOCAL}@"  # leftmost: the local part starts at the first character that can continue it
    rf"(?:(?:{_LABEL}\.)+(?:[^\W\d_]{{2,24}}|xn--[a-z0-9-]{{1,59}})(?![\w-])|{_QUAD}(?![\w.])|\[{_QUAD}\])"
)
IPV4 = re.compile(rf"(?<![\w.]){_QUAD}(?!\w|\.\d)")
_VERSION_BEFORE = re.compile(
    r"(?:\b(?:version|ver|assemblyversion|assemblyfileversion|fileversion|productversion|release|build|firmware|"
    r"section|sec|chapter|article|art|clause|figure|fig|table|rule|paragraph|para|step|item)\b\W{0,6}|§\s*|\b[vV])$",
    re.IGNORECASE,
)
_VERSION_AFTER = re.compile(r"[-+](?:alpha|beta|rc|pre|dev|build|snapshot|final|release)", re.IGNORECASE)


def version_like(text: str, start: int, end: int) -> bool:
    """Whether the dotted quad text[start:end] reads as a version or section number (the module docstring's rule)."""
    line_start = text.rfind("\n", max(0, start - 24), start) + 1
    if _VERSION_BEFORE.search(text, max(line_start, start - 24), start):
        return True
    if _VERSION_AFTER.match(text, end):
        return True
    return all(len(p) == 1 for p in text[start:end].split("."))
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
                if _is_public(m.group(0)) and (m.re is not IPV4 or not version_like(m.string, m.start(), m.end())):
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
