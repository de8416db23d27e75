# castline: `make demo`, `make test`, `make check`, `make bench`. System packages are installed when missing.
SHELL := /bin/bash
SWIFT ?= swift
BIN := .build/debug/castline

# Debian packages castline needs at run time and to build; `castline doctor` maps elements to these.
APT_PACKAGES := pulseaudio pulseaudio-utils xvfb pkg-config libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \
	gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
	gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-x gstreamer1.0-tools \
	gstreamer1.0-alsa gstreamer1.0-pulseaudio \
	nginx-light libnginx-mod-rtmp stunnel4 openssl ffmpeg graphviz libcurl4 libcurl4-openssl-dev python3 time tmux \
	libebur128-dev gstreamer1.0-nice

# What the tests add: a headless Chromium and its driver (the control page), Prometheus and promtool (the alert rules).
TEST_APT_PACKAGES := chromium chromium-driver python3-venv prometheus coturn
# Python packages of the tests, from PyPI, in a venv of the checkout's own (.venv, ignored).
VENV := .venv
# aiortc (with aiohttp): an independent WebRTC stack playing the WHIP endpoint; kubernetes-validate:
# deploy/kubernetes checked against a named Kubernetes version's schemas.
TEST_PYTHON_PACKAGES := selenium==4.51.0 aiortc==1.14.0 aiohttp==3.14.5 kubernetes-validate==1.31.0

.PHONY: deps test-deps build release demo test check bench fuzz clean

deps:
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(APT_PACKAGES)"

test-deps: deps
	@$(MAKE) --no-print-directory apt-install PACKAGES="$(TEST_APT_PACKAGES)"
	@$(VENV)/bin/python -c "import selenium, aiortc, aiohttp, kubernetes_validate" 2>/dev/null || \
		{ python3 -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check $(TEST_PYTHON_PACKAGES); }

.PHONY: apt-install
apt-install:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
		$$sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends $$missing; \
	fi

build: deps
	$(SWIFT) build

# The binary to install and to measure: optimised, with Swift's runtime and Foundation linked in
# (no dynamic relocation of them at start: 13 ms less CPU per start). Foundation's static
# networking links libcurl, hence libcurl4-openssl-dev above.
release: deps
	$(SWIFT) build -c release --static-swift-stdlib --product castline
	strip .build/release/castline

demo: build
	./scripts/demo.sh

# One test at a time: several suites time real media on the wall clock, and on
# two cores, parallel suites starve each other (seen as timing flakes in CI).
test: build test-deps
	$(SWIFT) test --no-parallel

# The inner loop, under 2 minutes on a built tree: the unit tests (no end-to-end runs of the
# binary), among them every kept fuzz-corpus input through its reader.
check: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --no-parallel --skip EndToEndTests

bench: release
	CASTLINE=$${CASTLINE:-.build/release/castline} ./bench/run-all.sh

# The HLS playlist parser, the MPEG-TS readers, the pipeline loader (files and --set) and the control
# API's command bodies under libFuzzer
# and AddressSanitizer, FUZZ_SECONDS (60) each.
fuzz:
	./Fuzz/run.sh

clean:
	rm -rf .build
