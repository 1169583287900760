# Two commands for a newcomer on Debian:
#   make demo   install what is missing, configure, build, run the demo
#   make test   the same setup, then the whole test suite through ctest
# and `make install PREFIX=~/.local` (default /usr/local) to put attnwalk, its data, a man
# page and bash completion under PREFIX.
BUILD ?= build
PREFIX ?= /usr/local
PACKAGES = cmake g++ make lld libxtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev libopenblas-dev \
           nlohmann-json3-dev libcli11-dev doctest-dev libpcre2-dev libutf8proc-dev libncurses-dev pkg-config python3 python3-jsonschema

.PHONY: demo test deps build install clean

demo: build
	./$(BUILD)/app/attnwalk walkthrough

test: build
	cd $(BUILD) && ctest --output-on-failure -j2

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j2

deps:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "attnwalk needs these Debian packages; run:"; \
	    echo "  sudo apt-get install -y" $$missing; \
	    exit 1; \
	  fi; \
	fi

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
