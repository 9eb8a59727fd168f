# hybroute mcp in a container: Debian's Chromium, the static binary, a
# non-root user, Chromium's sandbox on (the sidecar passes --no-sandbox only
# when it runs as root). `make image` builds it.
# The command is a module of its own (cmd), built with its own go.mod and
# go.sum (GOWORK=off) and the library beside it through its replace.
FROM golang:1.26-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY cmd/go.mod cmd/go.sum ./cmd/
WORKDIR /src/cmd
RUN GOWORK=off go mod download
COPY . /src
RUN CGO_ENABLED=0 GOWORK=off go build -ldflags=-s -o /out/hybroute ./hybroute

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
