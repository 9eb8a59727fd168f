# hybroute mcp in a container: Debian's Chromium, the static binary, a
# non-root user, Chromium's sandbox on (the sidecar passes --no-sandbox only
# when it runs as root). `make image` builds it.
# The command is a module of its own (cmd), built in the repository's
# workspace (go.work), which maps the library's placeholder version in
# cmd/go.mod to the sources beside it. The workspace needs every module it
# uses, so the whole tree is copied before the build.
FROM golang:1.26-trixie AS build
WORKDIR /src
COPY . .
WORKDIR /src/cmd
RUN CGO_ENABLED=0 go build -ldflags=-s -o /out/hybroute ./hybroute

FROM debian:trixie-slim
RUN apt-get update \
	&& apt-get install -y --no-install-recommends chromium ca-certificates fonts-liberation \
	&& rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 10001 hybroute
COPY --from=build /out/hybroute /usr/local/bin/hybroute
USER hybroute
WORKDIR /home/hybroute
ENV CHROMIUM=/usr/bin/chromium
EXPOSE 8931
ENTRYPOINT ["hybroute", "mcp"]
