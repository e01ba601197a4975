"""The spaCy-English-like word tokenizer now lives in `curate.lang.spaced` (the language layer, below every
step, so that filters, dedup and decontamination share one). This name is that module itself (an alias in
`sys.modules`, not a copy), so code and tests that import or patch `curate.filters._words` reach the one tokenizer."""

import sys

from curate.lang import spaced

sys.modules[__name__] = spaced
