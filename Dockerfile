# syncd container image: docker build -t syncd:$(cat VERSION) .
#
# Build stage: Debian 12 with the -dev packages of the Makefile's deps
# list, a release build (the Makefile's default -O2 -g; no sanitizers).
FROM debian:12 AS build
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential \
        pkg-config \
        libgit2-dev \
        libyaml-dev \
        libcurl4-openssl-dev \
        libjansson-dev \
        libjsonnet-dev \
        libcriterion-dev \
        libmicrohttpd-dev \
        zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# libcriterion-dev and libmicrohttpd-dev are only for the tests and the
# emulator, but the Makefile checks for every module of its list.
RUN make BUILD=build-image -j"$(nproc)" build-image/syncd && \
    strip --strip-debug -o /syncd build-image/syncd

# Runtime stage: the shared libraries syncd links (NEEDED: libyaml-0.so.2,
# libjansson.so.4, libcurl.so.4, libgit2.so.1.5, libmicrohttpd.so.12 (the
# health and metrics endpoint), libz.so.1 (chart and OCI archives), libc;
# and libjsonnet.so.0, loaded on the first jsonnet render (dlopen);
# their own dependencies come with them), CA certificates for HTTPS, and
# the two programs syncd runs for Git sources: ssh-keygen (openssh-client)
# to look host keys up in known_hosts and to check SSH commit signatures,
# gpgv for GPG commit signatures. libgit2 itself needs no ssh binary (it
# links libssh2). tests/integration/deploy.sh checks this list against
# the binary.
FROM debian:12-slim
RUN apt-get update && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libyaml-0-2 \
        libjansson4 \
        libcurl4 \
        libgit2-1.5 \
        libjsonnet0 \
        libmicrohttpd12 \
        zlib1g \
        ca-certificates \
        openssh-client \
        gpgv \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /syncd /usr/local/bin/syncd
# The uid the Deployment runs as (runAsUser: 65532); no shell, no home.
RUN groupadd --gid 65532 nonroot && \
    useradd --uid 65532 --gid 65532 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin nonroot && \
    mkdir -p /var/cache/syncd /etc/syncd && \
    chown 65532:65532 /var/cache/syncd
USER 65532:65532
ENV XDG_CACHE_HOME=/var/cache/syncd
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/syncd"]
CMD ["run", "-c", "/etc/syncd/syncd.yaml"]
