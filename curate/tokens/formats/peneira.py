"""`peneira.tokens/2`: the trainer's own format (`train.data.TokenDataset`; layout in docs/data-contract.md)."""

from __future__ import annotations

from typing import Any

from curate.io.token_format import digest_bytes, encode_index, shard_entry
from curate.tokens.formats.base import StreamWriter


class PeneiraWriter(StreamWriter):
    """`SPLIT/NAME.bin` (ids end to end) and `SPLIT/NAME.idx` (`PNRIDX01`, document ends and source codes)."""

    format = "peneira"

    def open(self) -> None:
        super().open()
        self.idx = self.stage(".idx")  # named from the start: its temporary name is this writer's alone

    def write_index(self) -> None:
        self.index = encode_index(self.all_ends(), self.all_codes())
        self.write_small(".idx", self.index, self.idx)

    def entry(self) -> dict[str, Any]:
        return shard_entry(self.split, self.name, self.docs, self.tokens, list(self.sources),
                           dict(sorted(self.per_source.items())), self.digest.max_id,
                           {"file": self.digest.hexdigest(), "index": digest_bytes(self.index)})
