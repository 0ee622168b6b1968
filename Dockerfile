# serenity-server on Debian 12. Build: docker build -t serenity .
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install_deps.sh scripts/
RUN scripts/install_deps.sh
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSERENITY_BUILD_TESTS=OFF \
 && cmake --build build -j"$(nproc)" --target serenity-server serenity-client

FROM debian:12-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libgrpc++1.51 libprotobuf32 libonnx1 \
    libabsl20220623 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libhiredis0.14 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/server/serenity-server /src/build/client/serenity-client /usr/local/bin/
USER 65534:65534
EXPOSE 50051 9464
# TLS is the default expectation: mount a certificate and key and pass
# --tls-cert/--tls-key (see deploy/serenity.yaml), or --plaintext explicitly.
ENTRYPOINT ["serenity-server", "--host", "0.0.0.0", "--port", "50051", "--metrics-port", "9464"]
