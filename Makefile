# The two commands of the README: `make demo` (curation on a generated sample, then a short training
# run) and `make test` (the whole suite). Both create .venv and install the project on first use.

PY := .venv/bin/python
CURATE := .venv/bin/curate
DEMO := demo
# The language-ID model: from the shared test data when it sits beside the clone, else its official address.
LID_FROM := $(if $(wildcard ../shared/data/models/lid.176.ftz),--from ../shared/data/models/lid.176.ftz,)

.PHONY: demo test lint clean wheelhouse

.venv/.installed: pyproject.toml setup.py $(wildcard curate/extract/*.c curate/extract/*.h curate/filters/*.c)  # the C extension is rebuilt when it changes
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	# torch first, so that pip takes the local CPU wheel instead of a multi-GB CUDA build
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[train,models,dev,fast,ray,s3]'
	touch $@

# The wheel as users get it (`pip wheel .`, then `auditwheel repair` to a manylinux tag) and every wheel it
# depends on, for tests/test_packaging.py, which installs it into a fresh venv with --no-index (tests use no
# network). Rebuilt when anything packaged changes.
WHEELHOUSE := build/wheelhouse
$(WHEELHOUSE)/.done: .venv/.installed MANIFEST.in $(shell find curate train third_party -type f ! -name '*.so' ! -path '*/__pycache__/*')
	rm -rf build/wheel $(WHEELHOUSE)
	$(PY) -m pip wheel -q --no-deps -w build/wheel .
	PATH="$(CURDIR)/.venv/bin:$$PATH" $(PY) -m auditwheel repair -w $(WHEELHOUSE) build/wheel/peneira-*.whl
	$(PY) -m pip download -q -d $(WHEELHOUSE) $(WHEELHOUSE)/peneira-*.whl
	touch $@

wheelhouse: $(WHEELHOUSE)/.done

demo: .venv/.installed
	# from scratch each time: the crawl is generated anew, and a run over rewritten inputs is refused by design
	rm -rf $(DEMO)
	$(CURATE) demo generate --out $(DEMO)/warc
	$(CURATE) models fetch lid $(LID_FROM)
	$(CURATE) decontam index --benchmark demo=$(DEMO)/warc/benchmark.jsonl:question,answer --out $(DEMO)/decontam
	$(CURATE) quality train --positive $(DEMO)/warc/quality/positive.jsonl \
		--negative $(DEMO)/warc/quality/negative.jsonl --bucket 50000 --out $(DEMO)/quality.bin
	PENEIRA_DEMO=$(DEMO) $(CURATE) run pipelines/demo.py --input '$(DEMO)/warc/*.warc.gz' --output $(DEMO)/curated --rejected --workers 2
	$(CURATE) report $(DEMO)/curated
	$(CURATE) mix --source web=$(DEMO)/curated:1.0 --tokens 400K --max-epochs 4 --seed 0 --out $(DEMO)/mix
	$(CURATE) tokenizer train $(DEMO)/mix --vocab-size 2048 --out $(DEMO)/tokenizer.json
	$(CURATE) tokenize $(DEMO)/mix --tokenizer $(DEMO)/tokenizer.json --val-fraction 0.05 --out $(DEMO)/tokens
	$(PY) -m train --data $(DEMO)/tokens --config train/configs/tiny.toml --steps 150 --out $(DEMO)/run --overwrite
	# evaluation on text the model never saw: pages of a second crawl (another seed) curated by pipelines/web.py,
	# and the demo benchmark as a language-modelling task (its planted copies were decontaminated away)
	$(CURATE) demo generate --seed 1 --pages 80 --files 1 --out $(DEMO)/heldout-warc
	$(CURATE) run pipelines/web.py --input '$(DEMO)/heldout-warc/*.warc.gz' --output $(DEMO)/heldout --workers 2
	$(PY) -m train eval $(DEMO)/run --heldout web=$(DEMO)/heldout --task $(DEMO)/warc/benchmark.jsonl --out $(DEMO)/eval
	@echo "demo done: report in $(DEMO)/curated/report.html, training curves in $(DEMO)/run/, evaluation in $(DEMO)/eval/"
	@echo "next: the commands live in the project's venv; activate it first:"
	@echo "  . .venv/bin/activate"
	@echo "  curate stats $(DEMO)/curated; curate inspect $(DEMO)/curated --rejected -n 5; curate report $(DEMO)/curated"
	@echo "  curate view $(DEMO)/curated   # in a browser: the funnel, every document and every drop, with filters"
	@echo "  python -m train sample --checkpoint $(DEMO)/run/ckpt.pt --prompt 'The city council'"

test: .venv/.installed $(WHEELHOUSE)/.done
	.venv/bin/pytest -q

lint: .venv/.installed
	.venv/bin/ruff check .

clean:
	rm -rf $(DEMO) .pytest_cache build
