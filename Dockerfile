# toolsearch in a container: the gateway over streamable HTTP, with Node
# available for the MCP servers a config starts with npx.
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t toolsearch .
#   docker run --rm -p 127.0.0.1:7777:7777 \
#     -v "$PWD/toolsearch.json:/config/toolsearch.json:ro" \
#     -e TOOLSEARCH_AUTH_TOKEN="$(cat token.txt)" toolsearch
#
# The config is read from /config/toolsearch.json (mount it read-only).
# Inside the container serve listens on 0.0.0.0:7777, beyond loopback, so it
# starts only with a bearer token: $TOOLSEARCH_AUTH_TOKEN, a token file
# (--auth-token-file, e.g. a secret under /run/secrets) or
# toolsearch.http.authToken in the config. Without one it exits saying so.

# Build: a static binary (no cgo), version stamped like the Makefile's.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.stampedVersion=${VERSION}" -o /out/toolsearch ./cmd/toolsearch

# Run: Node 22 (npx) for MCP servers, the binary, and a user without root.
FROM node:22-bookworm-slim
RUN groupadd --system --gid 10001 toolsearch \
 && useradd --system --uid 10001 --gid toolsearch --create-home --home-dir /home/toolsearch toolsearch \
 && mkdir -p /config \
 && chown toolsearch:toolsearch /config
COPY --from=build /out/toolsearch /usr/local/bin/toolsearch
USER toolsearch:toolsearch
WORKDIR /home/toolsearch
# Cached manifests and search indexes go under the user's cache folder.
ENV HOME=/home/toolsearch
VOLUME ["/home/toolsearch/.cache"]
EXPOSE 7777
ENTRYPOINT ["toolsearch"]
CMD ["serve", "-c", "/config/toolsearch.json", "--http", "0.0.0.0:7777"]
