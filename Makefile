# make run   - install what kts dev needs (ZooKeeper, the kts package), then start the local stack on 127.0.0.1:$(PORT)
#              (make run PORT=8081 for another port)
# make check - the fast tier, to run all day: lint, format check, type check, then the unit tests and the API tests
#              on no broker, PostgreSQL, Spark or browser (marker `check`), in parallel; prints how long it took
# make test  - install everything the tests need as well, then run every test against real components (ZooKeeper,
#              PostgreSQL, Kafka brokers, Spark, Chromium), in parallel; prints how long it took
# make jars  - build the JVM library (jvm/) into build/kts-jvm.jar
# make test-kafka-matrix - the real-broker proofs on every Kafka release kts runs, one after another
#              (make test-kafka-matrix KAFKA_RELEASES="3.3.2 4.0.2" for some; tests/kafka/README.md)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The port `make run` serves on. Set on the command line only (make run PORT=8081): a PORT variable some other
# tool left in the environment does not move the stack.
PORT = 8080
# `make run` needs only ZooKeeper's jars; the tests also run PostgreSQL, Chromium and Spark's JDBC drivers, and
# build pyjks's twofish (a C extension without wheels) for the JKS key-store tests.
RUN_APT_PACKAGES := zookeeper
TEST_APT_PACKAGES := postgresql-15 chromium chromium-driver libpostgresql-jdbc-java libxerial-sqlite-jdbc-java \
	build-essential python3-dev
# The tests' Kafka brokers (tests/kafka/README.md): Maven fetches their jars from Maven Central, a JDK runs them
# and compiles the tests' Java clients. Each as command:package, installed only where the command is missing
# (a JDK or Maven from elsewhere will do).
KAFKA_TOOLS := mvn:maven javac:default-jdk-headless
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run check test test-kafka-matrix jars jvm-tools fuzz deps run-deps system-deps run-system-deps lint openapi bench bench-quick bench-audit \
	bench-report bench-memory bench-login bench-broker-login clean

run: run-deps
	$(VENV)/bin/kts dev --port $(PORT)

# A base temp dir of its own: pytest prunes old ones at start, which would pull the data directories of
# ZooKeeper and PostgreSQL from under another test run on the same machine.
# Worker processes (pytest-xdist): most tests wait on a server (ZooKeeper, a broker, Spark, Chromium), so more
# workers than cores pay; each worker starts the session's servers it needs once (ZooKeeper, PostgreSQL, a broker,
# Spark), and --dist loadfile keeps the tests of one file on one worker, so that a module's fixture (a broker of its
# own, a kts stack, a Helm render) starts once. TEST_WORKERS=0 runs in this process, one test after another.
# A failed test runs once more: real servers on a loaded 2-core machine time out now and then. A test that
# passes only the second time still shows in the summary ("R" lines, "N rerun"): treat it as a bug to fix.
# pytest exits 5 when no test ran (all deselected included), which fails the target: an empty run is never green.
TEST_WORKERS ?= 4
CHECK_WORKERS ?= 2
PYTEST_PARALLEL = $(PY) -m pytest --dist loadfile --basetemp="$$(mktemp -d /tmp/kts-tests-XXXXXX)"
# Runs the commands of $(2), one after another until one fails, then prints how long $(1) took and passes its status on.
define timed
	@SECONDS=0; status=0; \
	{ set -x; $(2); } || { status=$$?; set +x; } 2>/dev/null; { set +x; } 2>/dev/null; \
	echo "make $(1): $$( [ $$status = 0 ] && echo passed || echo FAILED ) in $$((SECONDS / 60)) min $$((SECONDS % 60)) s"; \
	exit $$status
endef

test: deps jars
	$(call timed,test,$(PYTEST_PARALLEL) -n $(TEST_WORKERS) --reruns 1 --reruns-delay 2)

check: deps
	$(call timed,check,$(LINT) && $(PYTEST_PARALLEL) -n $(CHECK_WORKERS) -m check tests/unit tests/api)

# The JVM library jobs load (docs/orchestrators.md): Maven builds it from jvm/ with its unit tests; every framework
# it plugs into is `provided`, so the jar holds only its own classes. Rebuilt when a source or the pom changes.
JVM_SOURCES := jvm/pom.xml $(shell find jvm/src -type f 2>/dev/null)

jars: build/kts-jvm.jar

build/kts-jvm.jar: $(JVM_SOURCES) | jvm-tools
	mvn -B -q -f jvm/pom.xml package
	cp build/jvm/kts-jvm.jar $@

jvm-tools:
	$(call install_missing_commands,$(KAFKA_TOOLS))

# The release matrix (tests/kafka/matrix.py): each release of app/cli/server/kafka_broker/release.py fetched into
# the cache, its proofs run in a pytest process of their own, a table printed as they go and written to
# build/kafka-matrix.md. Minutes per release: not part of make test (which runs the newest release of each mode).
KAFKA_RELEASES ?=
test-kafka-matrix: deps
	$(PY) -m tests.kafka.matrix $(KAFKA_RELEASES)

# The long property-based fuzz run of every endpoint (make test runs a few thousand cases of it).
fuzz: deps
	KTS_FUZZ_EXAMPLES=200 $(PY) -m pytest tests/e2e/test_fuzz.py --basetemp="$$(mktemp -d /tmp/kts-fuzz-XXXXXX)"

# What `kts dev` needs, and no more: ZooKeeper from Debian and the runtime package (no test tools, no Spark).
run-deps: run-system-deps $(VENV)/.installed-run

# Everything: the tests' extras and system packages on top of what `make run` installs.
deps: system-deps $(VENV)/.installed-test

# Installs the Debian packages of $(1) that are missing (idempotent, quiet).
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

# Installs the Debian package of each command:package pair of $(1) whose command is missing.
define install_missing_commands
	@missing=""; for pair in $(1); do command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
endef

run-system-deps:
	$(call apt_install,$(RUN_APT_PACKAGES))

system-deps:
	$(call apt_install,$(RUN_APT_PACKAGES) $(TEST_APT_PACKAGES))
	$(call install_missing_commands,$(KAFKA_TOOLS))

$(VENV)/.installed-run: pyproject.toml
	[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed-run
	$(PY) -m pip install -q -e '.[test,analytics]'
	touch $@

openapi: deps
	$(PY) -c 'import json; from app.main import create_app; print(json.dumps(create_app().openapi(), indent=2, sort_keys=True))' > openapi/openapi.json

# The benchmark suite: every figure against a ceiling measured in the same run (prints JSON).
bench: deps
	$(PY) -m bench.suite

bench-quick: deps
	$(PY) -m bench.suite --quick

# Token creates per second with the PostgreSQL audit on vs a no-op audit sink (prints JSON).
bench-audit: deps
	$(PY) -m bench.create_audit

# The audit report on local[2] over 10 million synthetic events against a scan-and-group-by ceiling (prints JSON).
bench-report: deps
	$(PY) -m bench.audit_report

# The token cache's memory per token, the sizing figure of docs/operations.md (prints JSON).
bench-memory: run-deps
	$(PY) -m bench.token_cache_memory

# From a token's create (kts's 201) to its first login on a real Kafka 3.9 broker, p50 and p99 (prints JSON).
bench-broker-login: deps
	$(PY) -m bench.broker_login

# A refused Basic login for a known and for an unknown user: the same PBKDF2 work (prints JSON).
bench-login: run-deps
	$(PY) -m bench.login_timing

LINT = $(VENV)/bin/ruff check app tests bench && $(VENV)/bin/ruff format --check app tests bench && $(VENV)/bin/mypy

lint: deps
	$(LINT)

clean:
	rm -rf $(VENV) .kts-dev .pytest_cache .mypy_cache .ruff_cache *.egg-info
