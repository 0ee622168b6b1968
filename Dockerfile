# serenity-server (and serenity-client) on Debian 12.
#   v=$(build/server/serenity-server --version | cut -d" " -f2); docker build -t serenity:$v --build-arg VERSION=$v .
# The build stage runs the scripts CI runs (scripts/install_deps.sh --build
# installs the build half of CI's packages; scripts/build.sh is CI's build),
# so CI proves its steps. .dockerignore keeps local build trees out.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install_deps.sh scripts/
RUN scripts/install_deps.sh --build
COPY . .
RUN scripts/build.sh -DSERENITY_BUILD_TESTS=OFF

FROM debian:12-slim
ARG VERSION=0.4.0
LABEL org.opencontainers.image.title="serenity-server" \
      org.opencontainers.image.version="${VERSION}"
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libgrpc++1.51 libprotobuf32 libonnx1 \
    libabsl20220623 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libhiredis0.14 libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/server/serenity-server /src/build/client/serenity-client /usr/local/bin/
USER 65534:65534
EXPOSE 50051 8081 9464
# TLS is the default expectation: mount a certificate and key and pass
# --tls-cert/--tls-key (deploy/base/deployment.yaml), or --plaintext
# explicitly. 8081: --health-port (plaintext grpc.health.v1 only).
ENTRYPOINT ["serenity-server", "--host", "0.0.0.0", "--port", "50051", "--metrics-port", "9464"]
