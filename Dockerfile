# syntax=docker/dockerfile:1
#
# One image, four static binaries: worker, dispatcher, shoptools and
# mcpbridge.
#
#   docker build -t ghcr.io/ptcfleet/ptc:$(git describe --always) .
#
# The Kubernetes manifests (deploy/k8s) run /usr/local/bin/worker,
# /usr/local/bin/dispatcher, /usr/local/bin/shoptools and
# /usr/local/bin/mcpbridge from this image;
# deploy/k8s/manifests_test.go checks that the two agree. One image rather
# than one per binary: one build, one tag to roll out and one scan, and the
# dispatcher and the workers can never disagree on message versions.

ARG GO_VERSION=1.26

# ---- build: static binaries (CGO off), built for the target platform from
# the build platform so that multi-arch builds do not run under emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/worker ./cmd/dispatcher ./cmd/shoptools ./cmd/mcpbridge

# ---- runtime: distroless static (CA certificates for the model providers'
# HTTPS APIs, tzdata, /etc/passwd with the nonroot user; no shell).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/dispatcher /out/shoptools /out/mcpbridge /usr/local/bin/
USER 65532:65532
# Health endpoints: worker :8081, shoptools :8082, mcpbridge :8083
# (/healthz, /readyz).
EXPOSE 8081 8082 8083
ENTRYPOINT ["/usr/local/bin/worker"]
