# Builds of toolsearch. `make` builds bin/toolsearch for this machine;
# `make release` cross-builds every platform into dist/ with checksums.
# Every binary is static (CGO_ENABLED=0) and reports the version of the
# checkout (git describe) in `toolsearch version`.

VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS  := -s -w -X main.stampedVersion=$(VERSION)
# Not named GOFLAGS: make would export it over a GOFLAGS of the
# environment, which go reads as space-separated flags.
BUILDFLAGS := -trimpath
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST     := dist

.PHONY: build release check-cross clean

build:
	CGO_ENABLED=0 go build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/toolsearch ./cmd/toolsearch

# dist/toolsearch_<version>_<os>_<arch>[.exe] for each platform, and
# dist/SHA256SUMS.
release: $(PLATFORMS)
	cd $(DIST) && sha256sum toolsearch_$(VERSION)_* > SHA256SUMS

$(PLATFORMS):
	@mkdir -p $(DIST)
	CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$@)) GOARCH=$(word 2,$(subst /, ,$@)) \
		go build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' \
		-o $(DIST)/toolsearch_$(VERSION)_$(word 1,$(subst /, ,$@))_$(word 2,$(subst /, ,$@))$(if $(findstring windows,$@),.exe) ./cmd/toolsearch

# check-cross builds one foreign platform (windows/arm64) and checks what
# the binary says of itself (its platform, no cgo) and that it holds the
# stamped version. .ci/run runs it; the build cache makes it cheap after
# the first run (cold, it compiles the ~430 packages again for windows).
check-cross:
	$(MAKE) windows/arm64 DIST=$(DIST)/check VERSION=v0.0.0-check
	go version -m $(DIST)/check/toolsearch_v0.0.0-check_windows_arm64.exe > $(DIST)/check/buildinfo.txt
	grep -q 'GOOS=windows' $(DIST)/check/buildinfo.txt
	grep -q 'GOARCH=arm64' $(DIST)/check/buildinfo.txt
	grep -q 'CGO_ENABLED=0' $(DIST)/check/buildinfo.txt
	grep -a -q 'v0.0.0-check' $(DIST)/check/toolsearch_v0.0.0-check_windows_arm64.exe # -trimpath keeps -ldflags out of the build info
	rm -rf $(DIST)/check
	@echo "check-cross: windows/arm64 builds, static, version stamped"

clean:
	rm -rf bin $(DIST)
